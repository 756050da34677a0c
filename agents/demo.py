"""The demo agent of `seed_demo`: a small, deterministic support assistant.

It answers from a tiny knowledge base and calls tools the way a real tool-using agent would,
so every behavioural check has something true to score; its reply and refunds are written to
the demo ledger, where the outcome and effect verifiers read them back. `style="careful"`
passes the default publishing policy; `style="fast"`, the second demo version, is quicker and
terser but skips the order lookup before refunding, which the `tools_used` check catches, so
its publication is blocked.

`refund_agent` (below) is the second demo, seed 003's story: see its comment block.
"""

import json
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

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


# --- The refund desk: seed 003's release inversion, told with a real destination ---------------
#
# `refund_agent` is a tool-using agent whose tools write to a small ledger (a JSON Lines file,
# the demo's "destination"), and the outcome and effect verifiers below read that ledger back:
# the transcript is never taken as evidence. Two styles tell the story of seed 003:
#
# - `stable` looks the order up, writes, reads the receipt back, and stops at an approval wait
#   (owner, decision requested, deadline, resumable) when a credit exceeds its autonomous limit;
#   the high-impact credit tool is refused by the version's tool policy, and it says so.
# - `fast` skips the lookup and the read-back and answers in the reference's own words (its
#   quality score is higher, its calls cheaper), but when the credit tool is refused it tells
#   the customer the credit was applied and declares the task complete: a false success that
#   only the ledger reveals. It also gives up on a scheduler error instead of retrying.

_ledger_lock = threading.Lock()

REFUND_DESK_TASKS = {
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


def read_ledger(kind, since=None):
    """Ledger entries of `kind` written at or after `since` (an ISO time, e.g. a trial's start)."""
    path = ledger_path()
    if not path.exists():
        return []
    entries = []
    with _ledger_lock, path.open(encoding="utf-8") as ledger:
        for line in ledger:
            entry = json.loads(line)
            if entry.get("kind") == kind and (since is None or entry["at"] >= since):
                entries.append(entry)
    return entries


def _found(kind, since, expected):
    if not since:
        # Without the trial's start, an older entry could pass for this trial's: no verdict.
        raise LookupError("the trial's start time is unknown")
    matching = [
        e for e in read_ledger(kind, since) if all(e.get(k) == v for k, v in expected.items())
    ]
    evidence = {"destination": "demo ledger", "looked_for": {"kind": kind, **expected}}
    if matching:
        evidence["entry"] = matching[-1]["id"]
    return ("verified" if matching else "failed"), evidence


def outcome_in_ledger(context, kind, **expected):
    """Outcome verifier: the task's entry was written to the ledger during this trial."""
    return _found(kind, context["trial"]["started_at"], expected)


def effect_in_ledger(context, kind, fields):
    """Effect verifier: this call's entry (its `fields` taken from the call's arguments) was
    written to the ledger during this trial."""
    arguments = context["call"]["arguments"] or {}
    return _found(kind, context["trial"]["started_at"], {f: arguments.get(f) for f in fields})


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
    action = task.get("action")
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
            # Seed 003's false success: the refusal is ignored and the claim is made anyway.
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
