"""The offline extractor: rules and patterns, no model, no network.

It turns first-person chat into durable third-person notes naming the
speaker, with relative dates resolved against the turn's timestamp::

    Caroline (8 May 2023): "I went to a LGBTQ support group yesterday."
    -> "Caroline went to a LGBTQ support group on 7 May 2023."  (EVENT, 2023-05-07)

Per turn: redact secrets, split into sentences, drop filler and pure questions (a leading
statement clause of a question is kept), resolve dates, rewrite pronouns (I/me/my/... -> the
speaker; you/your -> the other speaker when known; we/us/our -> both, or the speaker's
family/group), classify the type, score the importance (1-10) with the heuristic gate, and
attach a commitment (what, who, due date) to promises and reminders. A short answer to the
previous speaker's question is kept with that question. A caption in
``turn.metadata["caption"]`` becomes "<speaker> shared a photo of ...".

The session's user
------------------
The user of an assistant session (a turn with role ``user`` and no speaker name, as the Claude
Code hooks send it) speaks to an agent about their work and life; their sentences are read with
rules of their own, each note a clean, self-contained sentence that keeps their exact names,
paths, numbers and `commands`:

* **warnings** ("Never ...", "Don't ...", "Avoid ...", "Careful with ...", "Watch out: ...",
  "Heads up: ...", and statements of a hazard: "X crashes if ...", "..., so don't ...") and
  **standing instructions** ("Always ...", "From now on, ...", "Make sure ...", "Please use X
  instead of Y", "When you ..., ...", "In the changelog, group ...", and a habit verb with a
  bare object: "Use tabs in the Makefile") are kept in the imperative they were given in
  ("Run `make check` before every push."), with a marker such as "Heads up:" or "Remember to"
  dropped: INSIGHT, ``category`` "warning" / "instruction", importance 8. Encouragement ("don't
  worry"), requests for now ("Run the tests again") and errands with a date are not;
* **decisions** ("We decided / chose / settled on / are going with ...", "Let's go with X",
  "Decision: ...") are FACTs with ``category`` "decision", importance >= 7, their reason kept;
* **goals** ("My goal this quarter is ...", "New goal: ...", "I'm trying to ...") take one
  shape, "The user's goal is to X (this quarter)." ("The team's" for "our"), so that the next
  goal reads as a new value of the same attribute: COMMITMENT, ``category`` "goal", importance 7;
* **facts** about the project, its environment and people ("The orders service runs on port
  8443", "Priya owns the billing service") are stored as said, "we/our" read as "the team";
  facts about themselves in the third person ("The user lives in Lisbon and works at ...").
  Importance at least 6 when the sentence names a tool, path, version, host, person or owner,
  preferences at least 7; confidence 0.8; nothing of theirs above 8, so no statement outranks
  a standing instruction;
* **procedures** ("To release, I bump ..., tag ... and push ...", a lead line
  and numbered steps) and **code conventions** ("we name tests test_<unit>_<case>",
  "errors derive from FooError") are PROCEDURE and PATTERN notes, see :mod:`.procedures`;
* **dates** point forward unless the sentence is about the past ("I have a dentist
  appointment on Friday" said on a Monday is the coming Friday, a COMMITMENT due then);
* no note for labels ("Remember this:", "FYI,"), framing ("Some context before we
  start."), questions, thinking aloud ("Sorry, I meant the second file"), vague
  subjects ("It works now!") or a sentence that alone would not pass the gate.

Named speakers (LoCoMo-style conversations) keep the general rules: advice between people is
not stored, and "we decided ..." stays a dated event.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, time

from ...models import Commitment, ExtractedNote, MemoryType, Turn
from ...text.dates import ResolvedDate, find_dates, format_day, is_future, rewrite_dates
from ...text.output import output_line, prose_lines
from ...text.redaction import redact
from ..base import Extractor
from ..signals import SignalScorer, is_filler, regex_entities, session_cue
from ..wording import date_as_subject, gerund_subject
from ..wording import reported as reported_speech
from .procedures import convention_note, listed_procedure, procedure_note
from .pronouns import Rewriter, possessive, session_grammar
from .rules import (
    COMMITMENT,
    FIRST_PERSON,
    GROUP_RE,
    IMPERATIVE,
    INLINE_CAPTION,
    INSIGHT,
    PAST,
    PREFERENCE,
    PURE_PROMPTS,
    RELATIONSHIP,
    SECOND_PERSON,
    SELF_STATE,
    SHARED_PIC,
    STRONG_COMMITMENT,
    STRONG_EMOTION,
    SUBJECTLESS,
    TASK,
    WH_START,
    statement_of_question,
)
from .sentences import (
    FENCED,
    INDENTED,
    SPACES,
    clean_sentence,
    content_words,
    finish,
    lower_first,
    split_sentences,
    symbol_heavy,
    upper_first,
)
from .session_rules import (
    ANSWER_LEAD,
    ASK_YOU,
    BEFORE_WE_START,
    CHANGE_ORDER,
    CHATTER,
    DECISION_IMPORTANCE,
    DRAWN,
    FORWARD_CUE,
    FRAMING,
    GOAL_IMPORTANCE,
    HAZARD,
    LABEL,
    LETS_BE,
    PAST_VERB,
    PAST_WORDS,
    RECURRING,
    REMIND,
    REQUEST,
    RULE,
    SESSION_COMMITMENT,
    SESSION_MAX_IMPORTANCE,
    SESSION_PREFERENCE,
    THING_ORDER,
    TO_VERB,
    TRAILING_ORDER,
    VAGUE_SUBJECT,
    WARNING_IMPORTANCE,
    goal_body,
    instruction_body,
    session_decision,
    session_floor,
    standing_order,
    statement_part,
    warning_body,
)

__all__ = ["OfflineExtractor"]

#: Turns handled inline; larger batches go to a worker thread.
_INLINE_TURNS = 32
#: Characters handled inline (a few milliseconds of rules); more go to a worker thread, so the
#: daemon's event loop (its socket, the hooks) keeps answering while a long turn is read.
_INLINE_CHARS = 1000


def _speaker_name(turn: Turn) -> str:
    if turn.speaker:
        return turn.speaker.strip()
    return {"assistant": "The assistant", "user": "The user"}.get(turn.role, turn.role.capitalize() or "The user")


def _context_speaker(item: Turn | str) -> tuple[str | None, str]:
    if isinstance(item, Turn):
        return _speaker_name(item), item.content
    m = re.match(r"^\s*([A-Z][\w .'-]{0,40}):\s+(.*)$", item, re.S)
    if m:
        return m.group(1).strip(), m.group(2)
    return None, item


class OfflineExtractor(Extractor):
    """Rule-based extraction (see the module docstring). ``gate`` scores importance."""

    def __init__(self, *, gate: SignalScorer | None = None, min_content_words: int = 2):
        self.gate = gate or SignalScorer()
        self.min_content_words = min_content_words

    async def extract(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        if len(turns) > _INLINE_TURNS or sum(len(t.content or "") for t in turns) > _INLINE_CHARS:
            return await asyncio.to_thread(self.extract_sync, turns, context)
        return self.extract_sync(turns, context)

    # ------------------------------------------------------------------ sync core
    def extract_sync(self, turns: Sequence[Turn], context: Sequence[Turn | str] = ()) -> list[ExtractedNote]:
        """:meth:`extract` without the event loop (pure CPU, about a millisecond a turn)."""
        history: list[tuple[str | None, str, str | None]] = []  # (speaker, text, turn id)
        for item in context:
            speaker, text = _context_speaker(item)
            history.append((speaker, text, item.id if isinstance(item, Turn) else None))
        notes: list[ExtractedNote] = []
        for turn in turns:
            notes.extend(self.extract_turn(turn, history))
            history.append((_speaker_name(turn), turn.content, turn.id))
        return notes

    def extract_turn(self, turn: Turn, history: Sequence[tuple[str | None, str, str | None]] = ()
                     ) -> list[ExtractedNote]:
        """Notes of one turn; ``history`` is (speaker, text, turn id) of the turns before it."""
        name = _speaker_name(turn)
        other = self._other_speaker(turn, name, history)
        text = redact(turn.content or "").replace("’", "'").replace("‘", "'")
        inline = INLINE_CAPTION.search(text)
        if inline and not (turn.metadata or {}).get("caption"):
            # "[shares an image: ...]" written into the text: treat it as the caption
            text = INLINE_CAPTION.sub(" ", text).strip()
            turn = Turn(id=turn.id, user_id=turn.user_id, content=turn.content, role=turn.role, speaker=turn.speaker,
                        timestamp=turn.timestamp, session_id=turn.session_id, project=turn.project,
                        metadata={**(turn.metadata or {}), "caption": inline.group(1)})
        group = GROUP_RE.search(text)
        if group:
            word = group.group("g").lower()
            we = f"{possessive(name)} {word}" if word in ("family", "team", "group", "class", "club", "band",
                                                          "crew") else f"{name} and {possessive(name)} {word}"
        elif other:
            we = f"{name} and {other}"
        else:
            we = f"{possessive(name)} group"
        anchor = turn.timestamp
        notes: list[ExtractedNote] = []
        if turn.speaker is None and turn.role == "user":
            notes = self._session_notes(text, turn, anchor)
            answer = self._answer_note(turn, text, name, None, Rewriter(name, None, "the team", we_singular=True),
                                       history)
            if answer is not None and not notes:
                notes = [answer]
            return notes
        rewrite = Rewriter(name, other, we)
        for raw in split_sentences(text):
            note = self._sentence_note(raw, turn, name, other, rewrite, anchor)
            if note is None:
                continue
            if notes and self._continues(raw) and len(notes[-1].content) < 240:
                prev = notes[-1]
                body = note.content.removeprefix(f"{name} said ")
                merged = prev.content.rstrip(".") + "; " + lower_first(body, (name, other or ""), turn.content)
                notes[-1] = ExtractedNote(merged, prev.type, max(prev.importance, note.importance), prev.confidence,
                                          prev.source_ids, prev.event_date or note.event_date,
                                          tuple(dict.fromkeys(prev.entities + note.entities)),
                                          prev.commitment or note.commitment, prev.category or note.category)
                continue
            notes.append(note)
        answer = self._answer_note(turn, text, name, other, rewrite, history)
        if answer is not None and all(n.content.startswith(f"{name} said ") for n in notes):
            # the answer with its question replaces the answer's context-free fragments
            notes = [answer] + [n for n in notes if not n.content.startswith(f"{name} said ")]
        caption = self._caption_note(turn, name, anchor)
        if caption is not None:
            notes.append(caption)
        return notes

    # ------------------------------------------------------------------ pieces
    @staticmethod
    def _other_speaker(turn: Turn, name: str, history: Sequence[tuple[str | None, str, str | None]]) -> str | None:
        meta = turn.metadata or {}
        for key in ("other_speaker", "addressee"):
            if isinstance(meta.get(key), str) and meta[key]:
                return str(meta[key])
        participants = meta.get("participants") or meta.get("speakers")
        if isinstance(participants, Sequence) and not isinstance(participants, str):
            others = [str(p) for p in participants if str(p) != name]
            if len(others) == 1:
                return others[0]
        for speaker, _, _ in reversed(history):
            if speaker and speaker != name and speaker not in ("The user", "The assistant"):
                return speaker
        return None

    @staticmethod
    def _continues(raw: str) -> bool:
        """A sentence that leans on the previous one ("It was so powerful.")."""
        s = clean_sentence(raw)
        return bool(re.match(r"^(?:it|it's|that|that's|this|they|they're|there|he|she|which|and|but)\b", s, re.I)) \
            and len(s.split()) <= 14

    def _sentence_note(self, raw: str, turn: Turn, name: str, other: str | None, rewrite: Rewriter,
                       anchor: datetime | None) -> ExtractedNote | None:
        sentence = clean_sentence(raw)
        if not sentence or is_filler(sentence) or PURE_PROMPTS.match(sentence):
            return None
        if sentence.endswith("?") or WH_START.match(sentence) and not FIRST_PERSON.match(sentence):
            statement = statement_of_question(sentence)
            if statement is None:
                return None
            sentence = statement
        sentence = re.sub(r"\b([Dd])ont\b", r"\1on't", re.sub(r"\bIm\b", "I'm", sentence))
        if len(content_words(sentence)) < self.min_content_words and not SELF_STATE.match(sentence) \
                and not THING_ORDER.match(sentence):  # "install gh (CLI)": short, and it lasts
            return None
        sentence = re.sub(r"^(?:please\s+)?(?:remind|ping|nudge)\s+me\s+(to|about|that)\b", r"I want to be reminded \1",
                          sentence, flags=re.I)
        shared = SHARED_PIC.match(sentence)
        if shared:
            sentence = f"I shared a photo of {shared.group('what')}"
        m = SUBJECTLESS.match(sentence)
        if m and not FIRST_PERSON.match(sentence) and not gerund_subject(sentence):
            verb = m.group("verb").lower()
            if verb in ("going to", "planning", "thinking", "working", "heading", "hoping", "looking forward",
                        "currently", "still", "off to"):
                sentence = "I'm " + sentence[0].lower() + sentence[1:]
            elif verb == "been":
                sentence = "I've " + sentence[0].lower() + sentence[1:]
            else:
                sentence = "I " + sentence[0].lower() + sentence[1:]
        first_person = bool(FIRST_PERSON.search(sentence))
        if not first_person and IMPERATIVE.match(sentence):
            return None  # advice or encouragement, not a fact about anyone
        future = is_future(sentence)
        dated, dates = rewrite_dates(sentence, anchor, future=future)
        note_type = self._classify(sentence, dates, future)
        content = rewrite(dated)
        reported = not first_person
        if reported:
            if SECOND_PERSON.search(sentence) and other is None:
                return None  # "you" with nobody to name: not self-contained
            order, body = instruction_body(sentence, anchor)
            if order is not None and not body.lower().startswith(("always", "never", "from now on", "when", "if")):
                # "Use pnpm from now on." -> "Robin said to use pnpm from now on."
                content = f"{name} said to {rewrite(body[:1].lower() + body[1:])}"
            else:
                content = reported_speech(name, lower_first(content, (name, other or ''), turn.content), sentence)
            if note_type is MemoryType.EVENT:
                note_type = MemoryType.FACT
        if note_type is MemoryType.EVENT and not dates and anchor is not None:
            content = finish(content)[:-1] + f" (mentioned on {format_day(anchor.date())})"
        content = finish(date_as_subject(content))
        if len(content) < 8:
            return None
        entities = tuple(dict.fromkeys([name] + regex_entities(dated)))
        score = self.gate.score(sentence).score
        importance = self._importance(note_type, score, dates, entities, sentence, reported)
        commitment = self._commitment(note_type, content, name, other, dates, sentence) \
            if note_type is MemoryType.COMMITMENT else None
        event_date = dates[0].iso if dates else None
        return ExtractedNote(content=content, type=note_type, importance=importance,
                             confidence=0.5 if reported else 0.7, source_ids=(turn.id,), event_date=event_date,
                             entities=entities, commitment=commitment)

    # ------------------------------------------------------------------ the session's user
    def _session_notes(self, text: str, turn: Turn, anchor: datetime | None) -> list[ExtractedNote]:
        """Notes of a turn of an assistant session's user (role ``user``, no speaker name)."""
        rewrite = Rewriter("The user", None, "the team", we_singular=True)
        kept = False  # whether the previous sentence gave a note
        text = FENCED.sub("\n", text)  # pasted code, configs and logs are not statements
        notes, text = listed_procedure(text, turn, rewrite)  # "To release:" and its numbered steps: one note
        text = prose_lines("\n".join(line for line in text.split("\n") if not INDENTED.match(line)))
        # a list of three lines or more is mostly pasted or drafted for the task at hand: only an
        # explicit standing order in it ("Always ...", "Never ...") is an instruction or warning
        lines = sum(1 for line in text.split("\n") if line.strip())
        listed = lines >= 3
        for raw in split_sentences(text):
            if output_line(raw.strip()) or symbol_heavy(raw) and not THING_ORDER.match(raw.strip()):
                kept = False
                continue
            if kept and self._continues(raw) and len(notes[-1].content) < 240:
                prev = notes[-1]
                more = finish(session_grammar(rewrite(clean_sentence(raw, keep_code=True))))
                if len(more) > 1:
                    notes[-1] = replace(prev, content=prev.content.rstrip(".") + "; " + more[:1].lower() + more[1:])
                continue
            note = self._session_note(raw, turn, rewrite, anchor, listed=listed, pasted=lines >= 6)
            kept = note is not None
            if note is not None:
                notes.append(note)
        return notes

    def _session_note(self, raw: str, turn: Turn, rewrite: Rewriter, anchor: datetime | None, *,
                      listed: bool = False, pasted: bool = False) -> ExtractedNote | None:
        """A note of one sentence of an assistant session's user (see "The session's user" in the
        module doc); ``listed``: the sentence is one line of a list (three lines or more);
        ``pasted``: of a long one (six or more), where only what the user says of themselves or
        the team is theirs."""
        if raw.rstrip().endswith(":") or DRAWN.match(raw):
            return None  # a heading or the lead-in of a list ("Install all necessary tools:"), a drawn line
        sentence = statement_part(ANSWER_LEAD.sub("", clean_sentence(raw, keep_code=True)))  # "X (a cli?)": X
        if LETS_BE.match(sentence):  # "lets be cautious and verify at each step": how to work
            sentence = upper_first(LETS_BE.sub("be", sentence))
        trailing = TRAILING_ORDER.search(sentence)
        if trailing is not None and not sentence.endswith("?"):
            # "complete the commit, always verify and run hooks": the request is for now, the order stands
            sentence = upper_first(re.sub(r"^and\s+", "", trailing.group("order"), flags=re.I))
        while True:  # "Remember this: ...", "FYI, ...": the label is not part of the fact
            label = LABEL.match(sentence)
            if label is None or not label.group("body").strip():
                break
            sentence = upper_first(label.group("body").strip())
        if not sentence or is_filler(sentence) or PURE_PROMPTS.match(sentence):
            return None
        sentence = BEFORE_WE_START.sub("", sentence).strip()
        if not sentence or FRAMING.match(sentence.rstrip(".!")):
            return None
        sentence = re.sub(r"\b([Dd])ont\b", r"\1on't", re.sub(r"\bIm\b", "I'm", sentence))
        if len(content_words(sentence)) < self.min_content_words and not SELF_STATE.match(sentence) \
                and not THING_ORDER.match(sentence):  # "install gh (CLI)": short, and it lasts
            return None
        if not sentence.endswith("?") and not (listed and not standing_order(sentence)):
            way = procedure_note(sentence, turn, rewrite) or convention_note(sentence, turn, rewrite)
            if way is not None:  # how the user works: a workflow's steps, a code convention
                return way
            for category, body in (warning_body(sentence), instruction_body(sentence, anchor)):
                if category is not None and len(content_words(body)) >= self.min_content_words:
                    return self._rule_note(category, body, turn, rewrite)
            decision = session_decision(sentence)
            if decision is not None:
                return self._fact_note(decision, turn, rewrite, anchor, category="decision",
                                       floor=DECISION_IMPORTANCE, past=True)
            goal = goal_body(sentence)
            if goal is not None:
                return self._goal_note(goal, turn, rewrite, anchor)
        if sentence.endswith("?") or WH_START.match(sentence) and not FIRST_PERSON.match(sentence) \
                and not re.match(r"^(?:don'?t|do not)\b", sentence, re.I):
            statement = statement_of_question(sentence)
            if statement is None:
                return None
            sentence = statement
        sentence = REMIND.sub(lambda m: f"I want to be reminded {m.group(1) or m.group(2)}", sentence)
        change = CHANGE_ORDER.match(sentence)
        if change is not None and (THING_ORDER.match(sentence) or regex_entities(sentence)
                                   or re.search(r"[/\\]|\b[A-Z]{2,}\b|\s--?[a-z]", sentence)):
            # "remove all trace of RDP": what the user had changed on a named thing stays true
            return self._fact_note(f"The user asked to {lower_first(sentence, (), sentence)}", turn, rewrite, anchor,
                                   category="decision", floor=DECISION_IMPORTANCE, past=True, stamp=True)
        if CHATTER.match(sentence) or IMPERATIVE.match(sentence) or REQUEST.match(sentence) \
                or ASK_YOU.match(sentence):
            return None  # thinking aloud, advice, or a request for now ("Show me the diff", "can you ...")
        first_person = bool(FIRST_PERSON.search(sentence))
        if pasted and not first_person and not re.search(r"\b(?:we|our|us|to-?do)\b", sentence, re.I):
            return None  # a line of a pasted report ("Checks for unsigned binaries"); a to-do listed is theirs
        if not first_person:
            if VAGUE_SUBJECT.match(sentence):
                return None  # "It works now": not a self-contained fact
            if HAZARD.search(sentence):
                return self._rule_note("warning", sentence, turn, rewrite)
            if RULE.search(sentence) and not find_dates(sentence, anchor):
                return self._rule_note("instruction", sentence, turn, rewrite)
        return self._fact_note(sentence, turn, rewrite, anchor)

    def _rule_note(self, category: str, body: str, turn: Turn, rewrite: Rewriter) -> ExtractedNote:
        """A warning or standing instruction, kept in the words (and the mood) it was given in."""
        # no date rewriting: "on a Friday" in a warning is a habit, not a date
        content = finish(session_grammar(rewrite(body)))
        entities = tuple(dict.fromkeys(regex_entities(body)))
        importance = max(WARNING_IMPORTANCE + 1, self._importance(MemoryType.INSIGHT, self.gate.score(body).score, (),
                                                                  entities, body, False))
        return ExtractedNote(content=content, type=MemoryType.INSIGHT, importance=min(10, importance),
                             confidence=0.9, source_ids=(turn.id,), entities=("The user",) + entities,
                             category=category)

    def _goal_note(self, goal: str, turn: Turn, rewrite: Rewriter, anchor: datetime | None) -> ExtractedNote:
        """The user's (or the team's) current goal: an open commitment the next goal replaces."""
        dated, dates = rewrite_dates(goal, anchor, future=True)
        content = finish(session_grammar(rewrite(dated)))
        entities = tuple(dict.fromkeys(regex_entities(goal)))
        due = dates[0] if dates else None
        what = re.sub(r"^(?:The user's|The team's|The)\s+(?:[\w-]+\s+){0,3}?(?:goal|objective|aim|target|priority|"
                      r"focus)\b[^,]*?\bis\s+(?:to\s+)?", "", content).rstrip(".")
        commitment = Commitment(what=what or content.rstrip("."), who=None,
                                due_at=datetime.combine(due.date, time(0, 0), tzinfo=UTC) if due else None,
                                due_text=due.text if due else None)
        return ExtractedNote(content=content, type=MemoryType.COMMITMENT, importance=GOAL_IMPORTANCE,
                             confidence=0.8, source_ids=(turn.id,), event_date=due.iso if due else None,
                             entities=("The user",) + entities, commitment=commitment, category="goal")

    def _fact_note(self, sentence: str, turn: Turn, rewrite: Rewriter, anchor: datetime | None, *,
                   category: str | None = None, floor: int = 0, past: bool = False,
                   stamp: bool = False) -> ExtractedNote | None:
        """A statement of the session's user: about themselves, the team, the project or a person."""
        name = "The user"
        first_person = bool(FIRST_PERSON.search(sentence))
        said_past = PAST_WORDS.search(sentence)
        before = bool(said_past or PAST_VERB.search(sentence)) and not (TO_VERB.search(sentence) and not said_past) \
            and not FORWARD_CUE.search(sentence)
        future = not past and (is_future(sentence) or not before)
        dated, dates = rewrite_dates(sentence, anchor, future=future)
        note_type = MemoryType.FACT if category == "decision" else self._classify(sentence, dates, future)
        recurring = bool(RECURRING.search(sentence))
        upcoming = [d for d in dates if d.granularity == "day" and (anchor is None or d.date >= anchor.date())]
        if category is None:
            if SESSION_COMMITMENT.search(sentence) or upcoming and future and not recurring:
                note_type = MemoryType.COMMITMENT
            elif note_type is MemoryType.EVENT and (recurring or not dates):
                note_type = MemoryType.FACT
            elif SESSION_PREFERENCE.search(sentence):
                note_type = MemoryType.PREFERENCE
        content = finish(session_grammar(rewrite(dated)))
        if len(content) < 8:
            return None
        if stamp and anchor is not None:  # when it was asked for: the next order may undo it
            content = content[:-1] + f" (on {format_day(anchor.date())})."
        entities = tuple(dict.fromkeys(([name] if first_person else []) + regex_entities(dated)))
        verdict = self.gate.score(sentence)
        if category is None and verdict.score < self.gate.threshold and len(split_sentences(turn.content)) > 1 \
                and not session_cue(sentence):
            # the sentence alone would not pass the gate: chatter inside a longer turn (a one-sentence
            # turn passed the gate already, with its context: "Emil's birthday is on 8 October.")
            return None
        importance = self._importance(note_type, verdict.score, dates, entities, sentence, False)
        floor = max(floor, session_floor(note_type, sentence, verdict.signals))
        commitment = None
        if note_type is MemoryType.COMMITMENT:
            commitment = self._commitment(note_type, content, name, None, upcoming or dates, sentence)
        event_date = (upcoming or dates)[0].iso if dates else None
        importance = min(SESSION_MAX_IMPORTANCE, max(floor, importance))
        return ExtractedNote(content=content, type=note_type, importance=importance, confidence=0.8, source_ids=(turn.id,), event_date=event_date, entities=entities,
                             commitment=commitment, category=category)

    @staticmethod
    def _classify(sentence: str, dates: Sequence[ResolvedDate], future: bool) -> MemoryType:
        if STRONG_COMMITMENT.search(sentence) or COMMITMENT.search(sentence) and (dates or re.search(
                r"\b(?:you|your)\b", sentence, re.I)):
            return MemoryType.COMMITMENT
        if TASK.search(sentence):
            return MemoryType.TASK
        if INSIGHT.search(sentence):
            return MemoryType.INSIGHT
        past = bool(PAST.search(sentence))
        if dates and past:
            return MemoryType.EVENT
        if PREFERENCE.search(sentence):
            return MemoryType.PREFERENCE
        if RELATIONSHIP.search(sentence):
            return MemoryType.RELATIONSHIP
        if past or dates and not future:
            return MemoryType.EVENT
        return MemoryType.FACT

    @staticmethod
    def _importance(note_type: MemoryType, score: float, dates: Sequence[ResolvedDate], entities: Sequence[str],
                    sentence: str, reported: bool) -> int:
        base = {MemoryType.COMMITMENT: 6, MemoryType.TASK: 5, MemoryType.RELATIONSHIP: 5,
                MemoryType.PREFERENCE: 5, MemoryType.INSIGHT: 4, MemoryType.EVENT: 4}.get(note_type, 3)
        value = base + round(score * 3)
        if dates:
            value += 1
        if len(entities) > 1:
            value += 1
        if STRONG_EMOTION.search(sentence):
            value += 1
        if reported:
            value -= 2
        return max(1, min(10, value))

    @staticmethod
    def _commitment(note_type: MemoryType, content: str, name: str, other: str | None,
                    dates: Sequence[ResolvedDate], sentence: str) -> Commitment:
        what = content.rstrip(".")
        m = re.search(rf"^{re.escape(name)}\s+(?:will|is going to|is planning to|plans to|promises to|promised to|"
                      rf"promises|needs to|has to)\s+(?P<what>.+)$", what)
        if m:
            what = m.group("what")
        else:
            r = re.search(rf"(?:remind\s+{re.escape(name)}|wants to be reminded)\s+(?:to|about)\s+(?P<what>.+)$", what,
                          re.I)
            if r:
                what = r.group("what")
        for d in dates:
            what = what.replace(d.phrase, "").replace(d.human, "")
        what = SPACES.sub(" ", what).strip(" ,;")
        who = other if other and other in content.replace(f"{name} and {other}", "") else None
        due = dates[0] if dates else None
        due_at = datetime.combine(due.date, time(0, 0), tzinfo=UTC) if due else None
        return Commitment(what=what or content, who=who, due_at=due_at, due_text=due.text if due else None)

    def _answer_note(self, turn: Turn, text: str, name: str, other: str | None, rewrite: Rewriter,
                     history: Sequence[tuple[str | None, str, str | None]]) -> ExtractedNote | None:
        """A short answer ("Yes, a dog named Max!") kept with the question it answers."""
        if not history:
            return None
        speaker, previous, previous_id = history[-1]
        if speaker == name or not previous.rstrip().endswith("?"):
            return None
        first = split_sentences(text)[0] if text.strip() else ""
        short = len(text.split()) <= 12
        yes_no = bool(re.match(r"^(?:yes|yeah|yep|yup|no|nope|nah|sure|definitely|of course|absolutely|not really)\b",
                               first.strip(), re.I))
        if not (short or yes_no and len(text.split()) <= 25) or is_filler(text):
            return None
        question = split_sentences(previous)[-1].strip()
        answer = rewrite_dates(clean_sentence(text) or text.strip(), turn.timestamp)[0]
        if len(content_words(question + " " + answer)) < 3:
            return None
        asker = speaker or other or "someone"
        content = finish(f"Asked by {asker} \"{question}\", {name} answered: {rewrite(answer).rstrip('.!')}")
        sources = (previous_id, turn.id) if previous_id else (turn.id,)
        return ExtractedNote(content=content, type=MemoryType.FACT, importance=3, confidence=0.6,
                             source_ids=sources, entities=(name,) + ((asker,) if speaker else ()))

    @staticmethod
    def _caption_note(turn: Turn, name: str, anchor: datetime | None) -> ExtractedNote | None:
        meta = turn.metadata or {}
        caption = meta.get("caption") or meta.get("blip_caption")
        if not isinstance(caption, str) or not caption.strip():
            return None
        caption = redact(caption.strip().rstrip("."))
        if not re.match(r"^(?:a|an|the)\s+(?:photo|photograph|photography|picture|image|screenshot|pic|drawing)\b",
                        caption, re.I):
            caption = f"a photo of {caption}"
        when = f" on {format_day(anchor.date())}" if anchor else ""
        return ExtractedNote(content=finish(f"{name} shared {caption}{when}"), type=MemoryType.EVENT, importance=3,
                             confidence=0.6, source_ids=(turn.id,),
                             event_date=anchor.date().isoformat() if anchor else None, entities=(name,))
