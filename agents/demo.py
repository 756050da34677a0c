"""The demo agent of `seed_demo`: a small, deterministic support assistant.

It answers from a tiny knowledge base and calls tools the way a real tool-using agent would,
so every behavioural check has something true to score; its reply and refunds are written to
the demo ledger, where the outcome and effect verifiers read them back. `style="careful"`
passes the default publishing policy; `style="fast"`, the second demo version, is quicker and
terser but skips the order lookup before refunding, which the `tools_used` check catches, so
its publication is blocked.

`refund_agent` (below) is the second demo, the release-inversion story: see its comment block.
"""

import json
import re
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from sherlock.core.transcripts import tool_calls

KNOWLEDGE = {
    "refund": "Refunds under $50 are approved automatically within 3 business days.",
    "shipping": "Standard shipping takes 5 to 7 business days; express takes 2.",
    "password": "Reset your password from Settings > Security > Reset password.",
    "invoice": "Invoices are in Billing > History and can be downloaded as PDF.",
    "cancel": "You can cancel any time from Billing > Plan; access lasts until the period ends.",
    "address": "Change the billing address in Billing > Details.",
}


def topic_of(text):
    lowered = text.lower()
    for topic in KNOWLEDGE:
        if topic in lowered:
            return topic
    return None


def support_bot(case, style="careful", delay_ms=5):
    """Answer one case. `case` is the check input dict (docs/checks.md).

    The bot's destination is the demo ledger (below): the reply it posts on the ticket
    (`tickets.reply`) and the refund it issues (`refunds.create`) are written there, so the
    cases' outcome verifiers and the tools' effect verifiers read them back, and every call is
    billed (`cost_usd`). `careful` passes the default publishing policy; `fast` skips the order
    lookup before refunding, which the `tools_used` check catches on the two refund cases.
    """
    question = case.get("input")
    wants_json = isinstance(question, dict)
    text = question.get("question", "") if wants_json else str(question or "")
    time.sleep((delay_ms if style == "careful" else delay_ms / 2) / 1000)
    topic = topic_of(text)
    tools = _Tools(())
    windows = []
    if topic:
        tools.call("kb.search", {"query": topic}, lambda: KNOWLEDGE[topic])
        windows.append({"evidence_delta": f"found the {topic} article"})
    if topic == "refund":
        if style == "careful":
            tools.call("orders.lookup", {"order": "A-1001"}, lambda: "paid")
            windows.append({"evidence_delta": "order A-1001 is paid"})
        args = {"order": "A-1001", "amount": 40}
        entry = tools.call("refunds.create", args, lambda: write_ledger("refund", **args))
        windows.append({"evidence_delta": f"refund {entry['id']} written"})
    answer = KNOWLEDGE.get(topic, "I am not sure; let me connect you with a person.")
    if style == "fast":
        answer = answer.split(";")[0]
    # The reply is posted on the ticket, a hand-off included (topic None).
    tools.call(
        "tickets.reply",
        {"topic": topic, "answer": answer},
        lambda: write_ledger("reply", topic=topic, answer=answer)["id"],
    )
    windows.append({"evidence_delta": "reply posted"})
    output = json.dumps({"answer": answer, "topic": topic}) if wants_json else answer
    return {
        "output": output,
        "tool_calls": tools.calls,
        "contexts": [KNOWLEDGE[topic]] if topic else [],
        "declared_complete": topic is not None,
        "windows": windows,
        "cost_usd": _SUPPORT_COSTS[style],
        "usage": {"prompt_tokens": 40 + len(text) // 4, "completion_tokens": len(answer) // 4},
    }


# Billed cost per support-bot trial (USD).
_SUPPORT_COSTS = {"careful": 0.012, "fast": 0.008}


# --- The help centre: a rate that clears its minimum by point estimate, not by interval ---------

# 27 questions the knowledge base answers, and 3 on returns, which it has no article for.
HELP_QUESTIONS = [
    template.format(topic)
    for topic in ("shipping", "password", "invoice")
    for template in (
        "What should I know about {}?",
        "Quick question about {}.",
        "Where do I read about {}?",
        "Who handles {} questions?",
        "Is there a help page on {}?",
        "Can you explain {} to me?",
        "I have a problem with {}.",
        "Any tips on {}?",
        "What changed recently in {}?",
    )
] + [
    "Can I return a gift?",
    "How many days do I have to return an item?",
    "Do returns cost anything?",
]


def help_answerer(case, **_):
    """`help-answerer` v1: searches the knowledge base, then answers, except for questions on
    returns, which it answers from memory without looking anything up. The `tools_used` check
    fails those 3 of the 30 cases: a case pass rate of 0.90, which clears its policy's 0.85 as
    a point estimate, but whose 95 % interval (0.74 to 0.97) does not: insufficient evidence."""
    text = str(case.get("input") or "")
    topic = topic_of(text)
    calls = []
    if topic:
        calls.append({"id": "kb-1", "name": "kb.search", "arguments": {"query": topic}})
    answer = KNOWLEDGE.get(topic, "Returns are free within 30 days.")
    return {"output": answer, "tool_calls": calls, "cost_usd": 0.004}


# --- The refund desk: the release inversion, told with a real destination --------------------
# (a faster, cheaper-looking version that loses on verified outcomes)
#
# `refund_agent` is a tool-using agent whose tools write to a small ledger (a JSON Lines file,
# the demo's "destination"), and the outcome and effect verifiers below read that ledger back:
# the transcript is never taken as evidence. Two styles tell the release-inversion story:
#
# - `stable` looks the order up, writes, reads the receipt back, and stops at an approval wait
#   (owner, decision requested, deadline, resumable) when a credit exceeds its autonomous limit;
#   the high-impact credit tool is refused by the version's tool policy, and it says so.
# - `fast` skips the lookup and the read-back and answers in the reference's own words (its
#   quality score is higher, its calls cheaper), but when the credit tool is refused it tells
#   the customer the credit was applied and declares the task complete: a false success that
#   only the ledger reveals. It also gives up on a scheduler error instead of retrying.

_ledger_lock = threading.Lock()

REFUND_DESK_TASKS: dict[str, dict[str, Any]] = {
    "refund-a1001": {
        "request": "Refund $40 on order A-1001 and note it on the ticket.",
        "action": "refund",
        "order": "A-1001",
        "amount": 40,
        "reference": "Refunded $40 on order A-1001 and noted it on the ticket.",
    },
    "address-c88": {
        "request": "Change the billing address of contact C-88 to 4 Rue Cler, Paris.",
        "action": "address",
        "contact": "C-88",
        "city": "Paris",
        "reference": "Updated the billing address of contact C-88 to 4 Rue Cler, Paris.",
    },
    "refund-b2002": {
        "request": "Refund $25 on order B-2002.",
        "action": "refund",
        "order": "B-2002",
        "amount": 25,
        "reference": "Refunded $25 on order B-2002.",
    },
    "weekly-report": {
        "request": "Schedule the weekly usage report to ops@example.com.",
        "action": "schedule",
        "job": "weekly-usage-report",
        "recipient": "ops@example.com",
        "reference": "Scheduled the weekly usage report to ops@example.com every Monday.",
    },
    "credit-k2207": {
        "request": "Apply a $250 goodwill credit to account K-2207 (our limit is $100).",
        "action": "credit",
        "account": "K-2207",
        "amount": 250,
        "reference": "Applied a $250 goodwill credit to account K-2207.",
    },
}

# Billed cost per trial (USD): the fast style spends less on every attempt.
_COSTS = {
    "stable": {"refund": 0.44, "address": 0.39, "schedule": 0.43, "credit": 0.37},
    "fast": {"refund": 0.36, "address": 0.35, "schedule": 0.40, "credit": 0.37},
}
_COSTS_SECOND_REFUND = {"stable": 0.45, "fast": 0.41}


def ledger_path():
    """The demo destination, `settings.SHERLOCK_DEMO_LEDGER` (`.run/demo-ledger.jsonl`)."""
    return Path(settings.SHERLOCK_DEMO_LEDGER)


def write_ledger(kind, **fields):
    """Append one entry to the ledger and return it with its id and time (the tool's receipt)."""
    entry = {
        "id": f"{kind[:1].upper()}-{uuid.uuid4().hex[:8]}",
        "kind": kind,
        "at": datetime.now(UTC).isoformat(),
        **fields,
    }
    path = ledger_path()
    with _ledger_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as ledger:
            ledger.write(json.dumps(entry) + "\n")
    return entry


# --- The ledger verifiers: an entry is tied to the call that wrote it by its id ---------------
#
# Trials run concurrently (a run's cases and repetitions at once), and two trials can write
# identical entries a fraction of a millisecond apart (the "I am not sure" replies of two
# repetitions). So an entry is never taken as a trial's because it has the right kind and
# fields and was written since the trial started: that let one trial's write verify another's.
# It is identified by its id, the receipt the tool returned (`write_ledger`'s id, which the
# demo's tool runtime records as the call's `result`). Presence needs that receipt; absence
# needs none: when no entry of the kind and fields was written since the trial started, none
# can be this trial's. An entry that matches but that no call of the trial returned could be
# its own (a result not recorded) or a stranger's: no verdict, never `verified`.

_RECEIPT = re.compile(r"[A-Z]-[0-9a-f]{8}")  # write_ledger's ids


def receipt_of(result):
    """The ledger id a demo tool returned: the id itself (`tickets.reply`) or the entry's id
    (`refunds.create` returns the entry); None when the call returned none ("paid", a
    rejection, nothing)."""
    if isinstance(result, Mapping):
        result = result.get("id")
    return result if isinstance(result, str) and _RECEIPT.fullmatch(result) else None


def _ledger_entries():
    """Every ledger entry, in the order written."""
    path = ledger_path()
    if not path.exists():
        return []
    with _ledger_lock, path.open(encoding="utf-8") as ledger:
        return [json.loads(line) for line in ledger]


def _differences(entry, expected):
    """The fields of `entry` that are not as `expected` ({} when it matches)."""
    return {k: entry.get(k) for k, v in expected.items() if entry.get(k) != v}


def _written_since(entries, kind, since, expected):
    return [
        e
        for e in entries
        if e.get("kind") == kind and e["at"] >= since and not _differences(e, expected)
    ]


def effect_in_ledger(context, kind, fields):
    """Effect verifier: the entry whose id this call returned is in the ledger, is of `kind`,
    was written during this trial and holds the call's arguments named in `fields`.

    `verified` names that entry; `failed` says what it is not (absent, another kind, older than
    the trial, other values). A call that returned no id is `failed` when no entry of the kind
    and fields was written during the trial (none can be its own), and `unknown` when some were:
    which one, if any, is this call's cannot be told. `unknown` too when the trial's start or
    the call's arguments cannot be read."""
    call = context["call"]
    since = context["trial"]["started_at"]
    arguments = call.get("arguments") or {}
    if not since:
        return "unknown", "the trial's start time is unknown"
    if not isinstance(arguments, Mapping):
        return "unknown", f"the call's arguments are not an object: {arguments!r}"
    expected = {f: arguments.get(f) for f in fields}
    receipt = receipt_of(call.get("result"))
    evidence = {
        "destination": "demo ledger",
        "looked_for": {"id": receipt, "kind": kind, **expected},
    }
    entries = _ledger_entries()
    if receipt is None:
        candidates = _written_since(entries, kind, since, expected)
        if candidates:
            return "unknown", (
                f"the call returned no ledger id (result {call.get('result')!r}); "
                f"{len(candidates)} {kind} entries with these fields were written during the "
                "trial and any could be another trial's"
            )
        return "failed", {**evidence, "found": f"no {kind} entry written during the trial"}
    entry = next((e for e in entries if e["id"] == receipt), None)
    if entry is None:
        return "failed", {**evidence, "found": "no ledger entry has the id the call returned"}
    if entry.get("kind") != kind:
        return "failed", {**evidence, "found": f"entry {receipt} is a {entry.get('kind')}"}
    if entry["at"] < since:
        return "failed", {**evidence, "found": f"entry {receipt} predates the trial"}
    differences = _differences(entry, expected)
    if differences:
        return "failed", {**evidence, "found": {"entry": receipt, **differences}}
    return "verified", {**evidence, "entry": receipt}


def outcome_in_ledger(context, kind, **expected):
    """Outcome verifier: one of the entries this trial's calls wrote (by the ids they returned)
    is of `kind`, was written during the trial and holds `expected`.

    `failed` when no such entry was written during the trial at all; `unavailable` when some
    were but no call of this trial returned their ids (they may be another trial's, counted in
    the evidence), when the trial's start is unknown or its tool calls cannot be read."""
    since = context["trial"]["started_at"]
    if not since:
        # Without the trial's start, an older entry could pass for this trial's: no verdict.
        return "unavailable", "the trial's start time is unknown"
    try:
        calls = tool_calls(context.get("transcript") or {}) or []
    except ValueError as exc:
        return "unavailable", f"the trial's tool calls cannot be read: {exc}"
    receipts = [r for r in (receipt_of(c.result) for c in calls if not c.denied) if r]
    evidence = {"destination": "demo ledger", "looked_for": {"kind": kind, **expected}}
    matching = _written_since(_ledger_entries(), kind, since, expected)
    own = [e["id"] for e in matching if e["id"] in receipts]
    if own:
        return "verified", {**evidence, "entry": own[-1]}
    if matching:
        return "unavailable", (
            f"{len(matching)} {kind} entries as expected were written during the trial, but no "
            f"call of this trial returned their ids (it returned {receipts or 'none'}): they "
            "may be another trial's"
        )
    return "failed", {**evidence, "receipts": receipts}


class _Tools:
    """The demo's in-process tool runtime: it refuses the tools the version's policy denies (as
    the openai_chat adapter does) and records every call on the transcript."""

    def __init__(self, deny):
        self.deny = set(deny or ())
        self.calls = []

    def call(self, name, arguments, run=None):
        record = {"id": f"call_{len(self.calls) + 1}", "name": name, "arguments": arguments}
        self.calls.append(record)
        if name in self.deny:
            record.update(denied=True, result=f"refused: {name} is denied by the tool policy")
            return None
        record["denied"] = False
        record["result"] = run() if run else "ok"
        return record["result"]


def refund_agent(case, style="stable", deny=()):
    """Handle one refund-desk task (the case input is one of `REFUND_DESK_TASKS`)."""
    task = dict(case.get("input") or {}, reference=(case.get("expected") or {}).get("output"))
    action = str(task.get("action"))
    tools = _Tools(deny)
    windows = []
    wait = None
    declared = True
    fast = style == "fast"

    def progressed(delta):
        windows.append({"evidence_delta": delta})

    if action in ("refund", "credit") and not fast:
        key = task.get("order") or task.get("account")
        tools.call("orders.lookup", {"key": key}, lambda: "paid")
        progressed(f"looked up {key}")

    if action == "refund":
        args = {"order": task["order"], "amount": task["amount"]}
        entry = tools.call("payments.refund", args, lambda: write_ledger("refund", **args))
        progressed(f"refund {entry['id']} written")
        if not fast:
            progressed(f"refund {entry['id']} read back")
        answer = (
            f"Refunded ${task['amount']} on order {task['order']}."
            if fast
            else f"I checked order {task['order']} and issued a ${task['amount']} refund "
            f"(receipt {entry['id']}); the ledger confirms it."
        )
    elif action == "address":
        args = {"contact": task["contact"], "city": task["city"]}
        entry = tools.call("crm.update_contact", args, lambda: write_ledger("address", **args))
        progressed(f"contact {task['contact']} updated ({entry['id']})")
        if not fast:
            progressed("address read back from the CRM")
            progressed("ticket noted")
        else:
            progressed("ticket noted")
        answer = (
            task["reference"]
            if fast
            else f"Contact {task['contact']} now has its billing address in {task['city']} "
            f"(change {entry['id']}); I read it back to be sure."
        )
    elif action == "schedule":
        args = {"job": task["job"], "recipient": task["recipient"]}
        if fast:
            # The shortcut: a malformed schedule that the scheduler rejects, and no retry.
            tools.call(
                "scheduler.create_job", {**args, "cron": "weekly"}, lambda: "rejected: bad cron"
            )
            progressed("lookup of the report definition")
            windows.append({"evidence_delta": None})
            declared = False
            answer = "The scheduler is busy; I will try again later."
        else:
            entry = tools.call(
                "scheduler.create_job",
                {**args, "cron": "0 8 * * 1"},
                lambda: write_ledger("job", **args),
            )
            progressed(f"job {entry['id']} created")
            progressed("job read back")
            progressed("recipient confirmed")
            answer = (
                f"The weekly usage report is scheduled for Mondays 08:00 to {task['recipient']} "
                f"(job {entry['id']})."
            )
    elif action == "credit":
        args = {"account": task["account"], "amount": task["amount"]}
        tools.call("billing.apply_credit", args, lambda: write_ledger("credit", **args))
        if fast:
            # The false success: the refusal is ignored and the claim is made anyway.
            progressed("credit requested")
            progressed("customer told")
            progressed("ticket closed")
            answer = task["reference"]
        else:
            request = tools.call(
                "approvals.create_request",
                {"account": task["account"], "amount": task["amount"]},
                lambda: write_ledger("approval", account=task["account"], amount=task["amount"]),
            )
            progressed(f"approval {request['id']} requested")
            windows.extend({"waiting": True} for _ in range(4))
            wait = {
                "owner": "billing-approver (role)",
                "decision_requested": f"approve ${task['amount']} credit to {task['account']}",
                "decision": "pending",
                "deadline": "2026-03-02T17:00:00Z",
                "resumable": True,
            }
            declared = False
            answer = (
                f"A ${task['amount']} credit is above my $100 limit, so I asked a billing approver "
                f"(request {request['id']}); I will apply it once approved."
            )
    else:
        declared = False
        answer = "I cannot help with that request."

    cost = _COSTS[style].get(action, 0.30)
    if action == "refund" and task.get("order") == "B-2002":
        cost = _COSTS_SECOND_REFUND[style]
    return {
        "output": answer,
        "tool_calls": tools.calls,
        "declared_complete": declared,
        "windows": windows,
        "wait": wait,
        "cost_usd": cost,
        "usage": {
            "prompt_tokens": 300 + len(tools.calls) * 40,
            "completion_tokens": len(answer) // 4,
        },
    }
