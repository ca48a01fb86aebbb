"""Deterministic synthetic memories and queries for the search and latency benchmarks.

Sentences are built from templates over people, places, preferences, events
and dates, so that the vocabulary is varied (names and places are rare terms,
template words such as "birthday" or "meeting" are common ones, as in real
memories). The same seed always gives the same memories and queries.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from dexai_memory.models import Memory, MemoryType

#: Bump when the templates change: cached databases are keyed by it.
GENERATOR_VERSION = 1

FIRST = """Alice Bob Carol David Emma Frank Grace Henry Isabel Jack Karen Liam Maya Noah Olivia Paul Quinn Rosa
Sam Tara Uma Victor Wendy Xavier Yara Zoe Aaron Bianca Caleb Diana Elena Felix Gloria Hugo Ines Jonas Kira Leo
Mila Nadia Oscar Priya Rafael Sofia Tomas Ursula Vera Walter Ximena Yusuf Zara Amir Beatriz Chen Dmitri Eun
Fatima Goran Hana Ivan Jun Kofi Lucia Marco Nia Omar Pia Ravi Selin Theo Ugo Valentina Wei Yuki Zainab Anya
Bruno Chloe Darius Esme Farid Greta Hamid Ilse Joao Kai Lena Mateo Nora Otto Petra Rohan Saoirse Tobias Vivian
Wren Yosef Zeno""".split()
LAST = """Smith Garcia Chen Kowalski Okafor Silva Nguyen Patel Müller Rossi Tanaka Dubois Jensen Novak Haddad
Moreau Larsen Costa Ivanova Kim Schmidt Fischer Romero Santos Lindqvist Byrne Duarte Weber Horvat Yilmaz""".split()
RELATION = """sister brother mother father cousin aunt uncle friend colleague manager neighbor roommate daughter son
grandmother grandfather partner mentor coach dentist doctor therapist landlord teacher""".split()
CITY = """Lisbon Porto Berlin Munich Paris Lyon Madrid Seville Rome Milan Vienna Prague Warsaw Krakow Oslo Bergen
Stockholm Helsinki Dublin Edinburgh London Bristol Amsterdam Utrecht Brussels Zurich Geneva Athens Istanbul
Cairo Nairobi Lagos Accra Tokyo Kyoto Osaka Seoul Busan Taipei Hanoi Bangkok Singapore Jakarta Manila Sydney
Melbourne Auckland Toronto Montreal Vancouver Boston Chicago Denver Austin Seattle Portland Atlanta Miami
Havana Lima Bogota Quito Santiago Montevideo Reykjavik Tallinn Riga Vilnius Budapest Bucharest Sofia Zagreb
Ljubljana Valletta Marrakesh Tunis Dakar Kigali""".split()
PLACE = """the library|the gym|the farmers market|the climbing hall|the old bakery|the community garden|the jazz club
|the harbour|the train station|the museum|the cinema|the coworking space|the clinic|the park by the river
|the ramen place|the bookshop|the pool|the yoga studio|the pub on Main Street|the ice rink""".replace("\n", "").split("|")
FOOD = """sushi ramen pizza tacos curry paella dumplings falafel pho lasagna risotto kimchi hummus bibimbap
ceviche croissants pancakes goulash pierogi shakshuka moussaka tiramisu gelato dim-sum burritos""".split()
DRINK = """espresso green-tea oat-latte chai matcha sparkling-water lemonade kombucha red-wine craft-beer
hot-chocolate iced-coffee mint-tea""".split()
HOBBY = """hiking bouldering pottery chess painting gardening running swimming cycling knitting photography
woodworking baking surfing salsa birdwatching sailing skiing journaling archery calligraphy""".split()
SKILL = """Spanish Japanese guitar piano Rust Python statistics welding sign-language Portuguese drums
watercolor Korean Italian Mandarin carpentry sourdough-baking""".split()
COMPANY = """Acme Globex Initech Umbrella Hooli Vandelay Stark Wayne Tyrell Cyberdyne Soylent Wonka Aperture
Monarch Gringotts Pied-Piper Dunder-Mifflin Oscorp Massive-Dynamic Nakatomi""".split()
JOB = """nurse engineer designer teacher accountant chef architect pharmacist pilot lawyer journalist
electrician researcher translator photographer""".split()
PROJECT = """Apollo Atlas Borealis Cascade Delta Ember Falcon Granite Helix Indigo Juniper Kestrel Lumen Meridian
Nimbus Orion Pioneer Quartz Redwood Sequoia Tundra Umbra Vortex Willow Zephyr""".split()
TECH = """PostgreSQL Kubernetes React SQLite Django Rust Terraform Kafka Redis GraphQL FastAPI Svelte
Elixir Flutter Spark""".split()
PET = """dog cat parrot rabbit turtle hamster goldfish""".split()
PET_NAME = """Max Luna Biscuit Pepper Mochi Rocky Olive Ziggy Nala Tofu Pickle Juno""".split()
EVENT = ["wedding", "graduation", "concert", "marathon", "conference", "birthday party", "hackathon",
         "book launch", "reunion", "art exhibition", "film festival", "job interview", "housewarming"]
ALLERGEN = """peanuts shellfish gluten lactose pollen cats penicillin sesame""".split()
MONTH = """January February March April May June July August September October November December""".split()
WEEKDAY = """Monday Tuesday Wednesday Thursday Friday Saturday Sunday""".split()
FEELING = """excited nervous proud worried relieved thrilled anxious happy""".split()

TEMPLATES: list[tuple[MemoryType, str]] = [
    (MemoryType.FACT, "{name} moved to {city} in {month} {year}."),
    (MemoryType.FACT, "{name} works at {company} as a {job} in {city}."),
    (MemoryType.RELATIONSHIP, "My {relation} {name} lives in {city} and loves {hobby}."),
    (MemoryType.RELATIONSHIP, "{name} is my {relation}; we met at {place} in {year}."),
    (MemoryType.PREFERENCE, "I prefer {drink} over {drink2} in the morning."),
    (MemoryType.PREFERENCE, "I really like {food} but I can't stand {food2}."),
    (MemoryType.PREFERENCE, "My favourite weekend activity is {hobby} near {place}."),
    (MemoryType.PREFERENCE, "{name} prefers {food} for dinner and always orders {drink}."),
    (MemoryType.EVENT, "Went to {name}'s {event} in {city} on {day} {month} {year}."),
    (MemoryType.EVENT, "Met {name} at {place} on {weekday} to talk about the {project} project."),
    (MemoryType.EVENT, "{name}'s birthday is on {day} {month}; they want a book about {hobby}."),
    (MemoryType.EVENT, "We visited {city} with {name} for the {event} last {season}."),
    (MemoryType.COMMITMENT, "Remind me to call {name} about the {project} deadline on {weekday}."),
    (MemoryType.COMMITMENT, "I promised {name} to send the {tech} migration plan by {day} {month}."),
    (MemoryType.FACT, "The {project} project uses {tech} and is due on {day} {month} {year}."),
    (MemoryType.FACT, "I started learning {skill} in {year} because of a trip to {city}."),
    (MemoryType.FACT, "I'm allergic to {allergen}, so no {food} with it please."),
    (MemoryType.FACT, "Our {pet} {pet_name} goes to the vet in {city} every {month}."),
    (MemoryType.INSIGHT, "I work best on {project} in the early morning after {hobby}."),
    (MemoryType.INSIGHT, "I felt {feeling} before the {event}; talking to {name} helped."),
    (MemoryType.TASK, "Book tickets to {city} for the {event} with {name} in {month}."),
    (MemoryType.SESSION_NOTE, "Debugged the {tech} connection pool for {project}; the fix was a timeout of {n} seconds."),
]

QUERY_TEMPLATES = [
    "where did {name} move",
    "what does my {relation} like",
    "when is {name}'s birthday",
    "who works at {company}",
    "what food do I like",
    "which drink do I prefer in the morning",
    "deadline of the {project} project",
    "what is {name} allergic to",
    "trip to {city}",
    "meeting with {name} about {project}",
    "what technology does {project} use",
    "{event} in {city}",
    "when did I start learning {skill}",
    "my {pet} {pet_name}",
    "what do I promise to send",
    "favourite weekend activity",
    "how did I feel before the {event}",
    "{name} {last}",
]

SEASONS = ["spring", "summer", "autumn", "winter"]


def _fill(rng: random.Random, template: str) -> str:
    food, food2 = rng.sample(FOOD, 2)
    drink, drink2 = rng.sample(DRINK, 2)
    values = {
        "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}" if rng.random() < 0.3 else rng.choice(FIRST),
        "last": rng.choice(LAST),
        "relation": rng.choice(RELATION), "city": rng.choice(CITY), "place": rng.choice(PLACE),
        "food": food.replace("-", " "), "food2": food2.replace("-", " "),
        "drink": drink.replace("-", " "), "drink2": drink2.replace("-", " "),
        "hobby": rng.choice(HOBBY), "skill": rng.choice(SKILL).replace("-", " "),
        "company": rng.choice(COMPANY).replace("-", " "), "job": rng.choice(JOB),
        "project": rng.choice(PROJECT), "tech": rng.choice(TECH), "pet": rng.choice(PET),
        "pet_name": rng.choice(PET_NAME), "event": rng.choice(EVENT), "allergen": rng.choice(ALLERGEN),
        "month": rng.choice(MONTH), "weekday": rng.choice(WEEKDAY), "day": rng.randint(1, 28),
        "year": rng.randint(2015, 2025), "season": rng.choice(SEASONS), "feeling": rng.choice(FEELING),
        "n": rng.choice([5, 10, 15, 30, 60, 90]),
    }
    return template.format(**values)


def memories(n: int, *, seed: int = 7, user_id: str = "bench-user") -> Iterator[Memory]:
    """``n`` synthetic memories of one user, deterministic for ``seed``."""
    rng = random.Random(seed)
    start = datetime(2022, 1, 1, tzinfo=UTC)
    for i in range(n):
        mtype, template = rng.choice(TEMPLATES)
        text = _fill(rng, template)
        if rng.random() < 0.25:  # a second clause makes lengths vary like real notes
            text = f"{text} {_fill(rng, rng.choice(TEMPLATES)[1])}"
        created = start + timedelta(minutes=int(i * 1_500_000 / max(n, 1)) + rng.randint(0, 59))
        yield Memory(
            content=text, user_id=user_id, type=mtype, importance=rng.randint(1, 10),
            confidence=round(rng.uniform(0.5, 1.0), 2), source_ids=(f"turn-{i}",),
            session_id=f"s{i // 40}", created_at=created,
        )


def queries(n: int, *, seed: int = 11) -> list[str]:
    """``n`` search queries in the style of auto-recall prompts, deterministic for ``seed``."""
    rng = random.Random(seed)
    return [_fill(rng, rng.choice(QUERY_TEMPLATES)) for _ in range(n)]
