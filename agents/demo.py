"""The demo agent of `seed_demo`: a small, deterministic support assistant.

It answers from a tiny knowledge base and calls tools the way a real tool-using agent would,
so every behavioural check has something true to score. `style="fast"` is the second demo
version: quicker and terser, it answers in JSON when asked but skips the order lookup before
refunding, which the `tools_used` check catches.
"""

import json
import time

KNOWLEDGE = {
    "refund": "Refunds under $50 are approved automatically within 3 business days.",
    "shipping": "Standard shipping takes 5 to 7 business days; express takes 2.",
    "password": "Reset your password from Settings > Security > Reset password.",
    "invoice": "Invoices are in Billing > History and can be downloaded as PDF.",
    "cancel": "You can cancel any time from Billing > Plan; access lasts until the period ends.",
    "address": "Change the billing address in Billing > Details.",
}


def _topic(text):
    lowered = text.lower()
    for topic in KNOWLEDGE:
        if topic in lowered:
            return topic
    return None


def support_bot(case, style="careful", delay_ms=5):
    """Answer one case. `case` is the check input dict (docs/checks.md)."""
    question = case.get("input")
    wants_json = isinstance(question, dict)
    text = question.get("question", "") if wants_json else str(question or "")
    time.sleep((delay_ms if style == "careful" else delay_ms / 2) / 1000)
    topic = _topic(text)
    tool_calls = []
    if topic:
        tool_calls.append(
            {"name": "kb.search", "arguments": {"query": topic}, "result": KNOWLEDGE[topic]}
        )
    if topic == "refund":
        if style == "careful":
            tool_calls.append(
                {"name": "orders.lookup", "arguments": {"order": "A-1001"}, "result": "paid"}
            )
        tool_calls.append(
            {"name": "refunds.create", "arguments": {"order": "A-1001", "amount": 40}}
        )
    answer = KNOWLEDGE.get(topic, "I am not sure; let me connect you with a person.")
    if style == "fast":
        answer = answer.split(";")[0]
    output = json.dumps({"answer": answer, "topic": topic}) if wants_json else answer
    return {
        "output": output,
        "tool_calls": tool_calls,
        "contexts": [KNOWLEDGE[topic]] if topic else [],
        "declared_complete": topic is not None,
        "usage": {"prompt_tokens": 40 + len(text) // 4, "completion_tokens": len(answer) // 4},
    }
