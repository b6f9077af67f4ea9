"""Conversation fixtures: shared input plus 1-10 ordered user turns.

The subject's actual reply to turn k becomes part of turn k+1's input, as in a real chat.
Each turn is a case of its own (id `CONV/TURN`) graded with the usual graders; the runner
executes a conversation's turns in order within one variant and run. Sources and earlier
messages are never shortened to fit: a turn whose history would break a limit fails before
it is sent, and the turns after it are not run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field, StrictInt, ValidationInfo, field_validator

from ..errors import ConfigError
from ..hashing import sha256_json
from ..suite.config import ConversationLimits
from ..validation import Strict, one_line_id, parse_model
from .case import MISSING, Case
from .schema import case_graders

DEFAULT_STYLE = "balanced"
#: how the error of a turn that was never sent begins (its history could not be carried as it was)
NOT_SENT = "turn not sent: "


def said(value: str) -> str:
    """A question or a style as written, when it says something (blank text is refused)."""
    if not value.strip():
        raise ValueError("is empty or blank: write the text to send, or leave the field out")
    return value


class SharedInput(Strict):
    """What every turn sees: the conversation's topic, notes or documents, style and seed."""

    topic: str | None = None
    notes: str | None = None
    documents: list[str] | dict[str, str] | None = None
    #: the response detail every turn asks for unless a turn sets its own (recorded, hashed, sent)
    style: str = Field(DEFAULT_STYLE, min_length=1)
    #: fixes a subject's sampling where it takes a seed (passed to it; see SubjectRequest.seed)
    seed: StrictInt | None = None  # `true` or "7" is a mistake, never seed 1 or 7

    @field_validator("style")
    @classmethod
    def _style_text(cls, value: str) -> str:
        return said(value)

    @field_validator("documents")
    @classmethod
    def _document_ids(cls, documents: Any, info: ValidationInfo) -> Any:
        # A document's id is a source id a citation names and a `[id]` line of the context
        # block: one line (a newline would forge a note), and never a notes paragraph's id (it
        # would silently replace that paragraph as the source `citations` checks).
        if isinstance(documents, dict):
            notes = {f"note_{i}" for i in range(1, len(note_paragraphs(info.data.get("notes"))) + 1)}
            for key in documents:
                one_line_id(key)
                if key in notes:
                    raise ValueError(f"document id {key!r} is the id of a notes paragraph; name it otherwise")
        return documents


class Turn(Strict):
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    expected: Any = None
    grader: str | dict | None = None
    graders: list[str | dict] | None = None
    fields: list[str | dict] | None = None
    evidence_notes: str | None = None
    style: str | None = None

    @field_validator("question", "style")
    @classmethod
    def _said(cls, value: str | None) -> str | None:
        # an empty turn style fell back to the shared one, a blank one was sent as "(Style:  )"
        return value if value is None else said(value)

    @field_validator("id")
    @classmethod
    def _id_one_line(cls, value: str) -> str:
        # the turn's id is part of a case id (CONV/TURN): no control character, as for any case id
        return one_line_id(value)


def note_paragraphs(notes: str | None) -> list[str]:
    """Nonempty, blank-line-separated paragraphs; their ids are note_1, note_2, ..."""
    if not notes:
        return []
    blocks, current = [], []
    for line in notes.splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append("\n".join(current))
            current = []
    if current:
        blocks.append("\n".join(current))
    return blocks


def sources_of(shared: dict) -> dict[str, str]:
    """Source ids a citation may name: note_N paragraphs and document ids (doc_N or given)."""
    out = {f"note_{i}": p for i, p in enumerate(note_paragraphs(shared.get("notes")), start=1)}
    docs = shared.get("documents")
    if isinstance(docs, dict):
        out.update(docs)
    elif isinstance(docs, list):
        out.update({f"doc_{i}": d for i, d in enumerate(docs, start=1)})
    return out


def context_block(shared: dict) -> str:
    """The shared input rendered once, at the start of the first user message."""
    parts = []
    if shared.get("topic"):
        parts.append(f"Topic: {shared['topic']}")
    paragraphs = note_paragraphs(shared.get("notes"))
    if paragraphs:
        parts.append("Notes:\n" + "\n\n".join(f"[note_{i}] {p}" for i, p in enumerate(paragraphs, start=1)))
    docs = shared.get("documents")
    if docs:
        items = docs.items() if isinstance(docs, dict) else ((f"doc_{i}", d) for i, d in enumerate(docs, start=1))
        parts.append("Documents:\n" + "\n\n".join(f"[{k}] {v}" for k, v in items))
    return "\n\n".join(parts)


def turn_messages(conversation: dict, index: int, replies: list[str]) -> list[dict]:
    """The exact messages sent for turn `index`, given the actual replies to earlier turns."""
    shared, turns = conversation["shared"], conversation["turns"]
    messages: list[dict] = []
    for k in range(index + 1):
        turn = turns[k]
        # A turn's own style is always said; the shared one only when it is not the default
        # (a subject asked nothing answers in the balanced default).
        style = turn.get("style") or (shared.get("style") if shared.get("style") != DEFAULT_STYLE else None)
        text = turn["question"] if not style else f"{turn['question']}\n\n(Style: {style})"
        if k == 0:
            block = context_block(shared)
            text = f"{block}\n\n{text}" if block else text
        messages.append({"role": "user", "content": text})
        if k < index:
            messages.append({"role": "assistant", "content": replies[k]})
    return messages


def breaks_chain(record: dict) -> bool:
    """Whether a turn's attempt record stops the later turns of its conversation: it gave no
    reply to carry (the subject failed, the turn was not sent, or it did not run). A turn whose
    reply exists but whose grading failed (a grader's error) is carried like any graded turn:
    the later turns are sent with it, as they are after a failed expectation."""
    status = record.get("status")
    return status in ("not-run", "interrupted") or status == "error" and record.get("output") is None


def check_history(conversation: dict, index: int, messages: list[dict], limits: dict) -> str | None:
    """Why this turn cannot be sent without shortening anything (None when it fits)."""
    if len(messages) > limits["max_messages"]:
        return f"history has {len(messages)} messages, over max_messages {limits['max_messages']}"
    for m in messages:
        if m["role"] == "assistant" and len(m["content"]) > limits["max_assistant_chars"]:
            return (f"an earlier reply has {len(m['content'])} characters, over max_assistant_chars "
                    f"{limits['max_assistant_chars']}")
    total = sum(len(m["content"]) for m in messages)
    if total > limits["max_conversation_chars"]:
        return f"conversation has {total} characters, over max_conversation_chars {limits['max_conversation_chars']}"
    return None


def check_messages(messages: list[dict], limits: ConversationLimits) -> tuple[str, str] | None:
    """(field suffix, problem) of a chat-message input that breaks the conversation limits or
    the order of a chat (None when it fits): they bound a case's supplied history as they bound
    a conversation's."""
    if not messages:
        return "", "no messages: a chat-message input needs at least one message"
    if len(messages) > limits.max_messages:
        return "", f"{len(messages)} messages, over max_messages {limits.max_messages} (limits.conversation)"
    problem = _order_problem(messages)
    if problem is not None:
        return problem
    for i, m in enumerate(messages):
        options = m.get("options") or []
        # An assistant message's options are sent in its content: they count in its size.
        size = len(m["content"]) + sum(len(o) for o in options)
        if m["role"] == "user" and size > limits.max_question_chars:
            return f".{i}.content", (f"user message has {size} characters, over max_question_chars "
                                     f"{limits.max_question_chars} (limits.conversation)")
        if m["role"] == "assistant" and size > limits.max_assistant_chars:
            what = " (its options included)" if options else ""
            return f".{i}.content", (f"assistant message has {size} characters{what}, over max_assistant_chars "
                                     f"{limits.max_assistant_chars} (limits.conversation)")
        if len(options) > limits.max_options:
            return f".{i}.options", (f"{len(options)} options, over max_options {limits.max_options} "
                                     "(limits.conversation)")
    total = sum(len(m["content"]) + sum(len(o) for o in m.get("options") or ()) for m in messages)
    if total > limits.max_conversation_chars:
        return "", (f"conversation has {total} characters, over max_conversation_chars "
                    f"{limits.max_conversation_chars} (limits.conversation)")
    return None


def _order_problem(messages: list[dict]) -> tuple[str, str] | None:
    """(field suffix, problem) where the messages are not in a chat's order: system messages
    first, a user message before any assistant message, a tool message only after the assistant
    message (or tool result) that called it. (A system message alone is a prompt, as OpenAI Evals
    write some.)"""
    seen: set[str] = set()
    previous = None
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "system" and seen - {"system"}:
            return f".{i}.role", (f"a system message comes before every other message (it follows a {previous} "
                                  "message here)")
        if role == "assistant" and "user" not in seen:
            return f".{i}.role", "an assistant message answers an earlier user message, and none comes before it"
        if role == "tool" and previous not in ("assistant", "tool"):
            return f".{i}.role", ("a tool message answers a call of the assistant message before it, and "
                                  f"{'none comes' if previous is None else f'a {previous} message comes'} before it")
        seen.add(role)
        previous = role
    return None


_HISTORY_KEYS = {"messages", "history", "assistant", "replies"}
#: case fields that a conversation names in each turn, never for the whole conversation
_PER_TURN = ("expected", "grader", "graders", "fields")


def _check_record_fields(raw: dict, *, file: str, line: int | None, case_id: str) -> None:
    """A case field a conversation cannot take is an error, never dropped: graders or an
    expected answer for the whole conversation would otherwise grade no turn at all."""
    for key in _PER_TURN:
        if key in raw:
            raise ConfigError(f"a conversation names {key!r} in each turn (turns.N.{key}), not for the whole "
                              "conversation", file=file, line=line, case_id=case_id, field=key)
    for key in ("vars", "expand"):
        if key in raw:
            raise ConfigError("prompt templates and their variables do not apply to conversation cases",
                              file=file, line=line, case_id=case_id, field=key)


def _read_documents(shared: dict, read_at: Callable[[str, str], str] | None) -> None:
    """`@path` documents become the text of that file, read as an `@` input is (confined to
    the case file's folder or --root); other documents are the text given."""
    docs = shared.get("documents")
    if not docs or read_at is None:
        return
    keys = docs.keys() if isinstance(docs, dict) else range(len(docs))
    for key in list(keys):
        value = docs[key]
        if isinstance(value, str) and value.startswith("@"):
            docs[key] = read_at(value[1:], f"conversation.documents.{key}")


def _check_static_history(conversation: dict, limits: ConversationLimits, *, file: str, line: int | None,
                          case_id: str) -> None:
    """A turn whose history breaks a limit before any reply is added (the shared input and the
    questions alone) could never be sent: an error when the file loads, not in every run."""
    for k, turn in enumerate(conversation["turns"]):
        messages = turn_messages(conversation, k, [""] * k)
        field = "conversation" if k == 0 else f"turns.{k}.question"
        if len(messages) > limits.max_messages:
            raise ConfigError(f"turn {turn['id']!r} could never be sent: its history holds {len(messages)} messages, "
                              f"over max_messages {limits.max_messages} (limits.conversation)", file=file, line=line,
                              case_id=case_id, field=f"turns.{k}")
        size = sum(len(m["content"]) for m in messages)
        if size > limits.max_conversation_chars:
            what = "topic, notes, documents and question" if k == 0 else "shared input and questions up to it"
            raise ConfigError(f"turn {turn['id']!r} could never be sent: its {what} make {size} characters before "
                              f"any reply, over max_conversation_chars {limits.max_conversation_chars} "
                              "(limits.conversation)", file=file, line=line, case_id=case_id, field=field)


def expand_conversation(raw: dict, record: Any, *, file: str, line: int | None,
                        limits: ConversationLimits, read_at: Callable[[str, str], str] | None = None) -> list[Case]:
    """Validate a conversation case record and turn it into one Case per turn (`read_at`
    reads an `@path` document: (path, field) -> text)."""
    case_id = record.id
    _check_record_fields(raw, file=file, line=line, case_id=case_id)
    shared_raw = raw.get("conversation") or {}
    if not isinstance(shared_raw, dict):
        raise ConfigError("must be an object {topic, notes, documents, style, seed}", file=file, line=line,
                          case_id=case_id, field="conversation")
    supplied = sorted(_HISTORY_KEYS & set(shared_raw))
    if supplied or any(isinstance(t, dict) and _HISTORY_KEYS & set(t) for t in record.turns or []):
        raise ConfigError("supplied assistant history is not allowed: the subject's own replies form the history",
                          file=file, line=line, case_id=case_id, field="turns")
    shared = parse_model(SharedInput, shared_raw, file=file, line=line, case_id=case_id,
                         prefix="conversation").model_dump(exclude_none=True)
    _read_documents(shared, read_at)
    if record.input is not None:
        raise ConfigError("a conversation case takes 'conversation' and 'turns', not 'input'", file=file,
                          line=line, case_id=case_id, field="input")
    turns_raw = record.turns or []
    if not 1 <= len(turns_raw) <= limits.max_turns:
        raise ConfigError(f"needs 1 to {limits.max_turns} turns, got {len(turns_raw)}", file=file, line=line,
                          case_id=case_id, field="turns")
    if len(shared.get("notes", "")) > limits.max_notes_chars:
        raise ConfigError(f"notes over max_notes_chars {limits.max_notes_chars}", file=file, line=line,
                          case_id=case_id, field="conversation.notes")
    paragraphs = len(note_paragraphs(shared.get("notes")))
    if paragraphs > limits.max_note_paragraphs:
        raise ConfigError(f"notes have {paragraphs} paragraphs, over max_note_paragraphs "
                          f"{limits.max_note_paragraphs} (limits.conversation)", file=file, line=line,
                          case_id=case_id, field="conversation.notes")
    turns, seen = [], set()
    for i, t in enumerate(turns_raw):
        if isinstance(t, dict) and "question" not in t and {"role", "content"} & set(t):
            raise ConfigError("a turn is {id, question, expected?, graders?} and the subject's replies form the "
                              "history; chat messages {role, content} are a case's 'input' (a list of them)",
                              file=file, line=line, case_id=case_id, field=f"turns.{i}")
        turn = parse_model(Turn, t, file=file, line=line, case_id=case_id, prefix=f"turns.{i}", every=True)
        if turn.id in seen:
            raise ConfigError(f"duplicate turn id {turn.id!r}", file=file, line=line, case_id=case_id,
                              field=f"turns.{i}.id")
        seen.add(turn.id)
        if len(turn.question) > limits.max_question_chars:
            raise ConfigError(f"question has {len(turn.question)} characters, over max_question_chars "
                              f"{limits.max_question_chars}", file=file, line=line, case_id=case_id,
                              field=f"turns.{i}.question")
        turns.append((turn, t))
    conversation = {"id": case_id, "shared": shared,
                    "turns": [{"id": tr.id, "question": tr.question, **({"style": tr.style} if tr.style else {})}
                              for tr, _ in turns],
                    "limits": limits.model_dump()}
    _check_static_history(conversation, limits, file=file, line=line, case_id=case_id)
    out = []
    sources = sources_of(shared)
    for index, (turn, t) in enumerate(turns):
        metadata = dict(record.metadata)
        if sources:
            metadata.setdefault("sources", sources)
        if turn.evidence_notes:
            metadata["evidence_notes"] = turn.evidence_notes
        specs, spec_fields = case_graders(turn, t, f"turns.{index}.")
        case = Case(
            id=f"{case_id}/{turn.id}",
            input={"conversation": case_id, "turn": turn.id, "index": index, "shared": shared,
                   "question": turn.question, **({"style": turn.style} if turn.style else {})},
            expected=t.get("expected", MISSING),
            graders=specs, grader_fields=spec_fields, category=record.category, tags=record.tags, metadata=metadata,
            synthetic=record.synthetic, rubric=record.rubric, notes=turn.evidence_notes or record.notes,
            split=record.split, turns=None, source=file, line=line,
            # the case's own scoring settings hold for each turn, as they would for the case
            threshold=record.threshold, transform=record.transform, replace_defaults=record.replace)
        case.conversation = conversation
        case.turn_index = index
        # The static hash binds the turn's own text; each attempt also records the hash of the
        # exact messages it sent (the replies before it included), so verify can check the chain.
        case.input_hash = sha256_json(case.input)
        out.append(case)
    return out
