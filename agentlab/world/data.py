"""The Skerrow Isles: an invented archipelago, so no model can answer from memory.

Forty-two entities of six kinds. Every attribute is either a quantity (a whole
number) or a relation (the name of another entity), so questions can chain:
the *captain* of a ship is a person, whose *home island* is an island, whose
*governor* is a person, whose *age* is a number. The data is written out by
hand, once, so it never changes between runs or machines.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

ARCHIPELAGO = "the Skerrow Isles"


@dataclass(frozen=True)
class Entity:
    """One thing in the world: a unique name, a kind, and its attributes (label -> value)."""

    name: str
    kind: str
    attributes: MappingProxyType


# Which attributes each kind has. A relation's value names an entity of the kind given here;
# a quantity's value is an int. Labels never contain " of " so questions can chain on it.
RELATIONS = {
    "governor": "person",
    "capital": "town",
    "main export": "good",
    "island": "island",
    "harbour master": "person",
    "home island": "island",
    "guild": "guild",
    "mentor": "person",
    "captain": "person",
    "home port": "town",
    "leader": "person",
    "seat": "town",
    "origin": "island",
}
QUANTITIES = (
    "population",
    "area",
    "founding year",
    "age",
    "crew",
    "tonnage",
    "launch year",
    "membership",
    "price",
)
UNITS = {"area": "km²", "price": "crowns a crate", "tonnage": "tons", "age": "years"}

KINDS = {
    "island": ("population", "area", "founding year", "governor", "capital", "main export"),
    "town": ("population", "founding year", "island", "harbour master"),
    "person": ("age", "home island", "guild", "mentor"),
    "ship": ("crew", "tonnage", "launch year", "captain", "home port"),
    "guild": ("membership", "founding year", "leader", "seat"),
    "good": ("price", "origin"),
}

# One row per entity, values in the order of KINDS[kind].
_ROWS = {
    "island": {
        "Varra": (2140, 58, 1612, "Ines Marrow", "Port Ashby", "Amberfish"),
        "Ostmere": (3875, 91, 1598, "Tobin Vale", "Gullhaven", "Glasskelp"),
        "Kelloway": (1290, 34, 1655, "Odile Crane", "Westwick", "Bluetin"),
        "Brindle": (5020, 127, 1571, "Hesper Lusk", "Lantern Bay", "Saltwool"),
        "Solace": (760, 19, 1703, "Jory Pike", "Cobble Quay", "Emberpeat"),
        "Marrowdeep": (2985, 76, 1630, "Maren Holt", "Saltmark", "Bluetin"),
        "Quillon": (1645, 45, 1688, "Cassian Reed", "Fenmouth", "Amberfish"),
        "Tamsk": (430, 12, 1724, "Wren Tally", "Hollin", "Glasskelp"),
    },
    "town": {
        "Port Ashby": (1180, 1614, "Varra", "Anselm Dray"),
        "Gullhaven": (2210, 1601, "Ostmere", "Petra Quist"),
        "Westwick": (640, 1659, "Kelloway", "Silas Orme"),
        "Lantern Bay": (2755, 1575, "Brindle", "Nell Harrow"),
        "Cobble Quay": (395, 1706, "Solace", "Tobin Vale"),
        "Saltmark": (1530, 1633, "Marrowdeep", "Odile Crane"),
        "Fenmouth": (905, 1690, "Quillon", "Jory Pike"),
        "Hollin": (215, 1727, "Tamsk", "Maren Holt"),
    },
    "person": {
        "Ines Marrow": (52, "Varra", "Chartmakers Guild", "Hesper Lusk"),
        "Tobin Vale": (47, "Ostmere", "Netmenders Guild", "Nell Harrow"),
        "Odile Crane": (61, "Marrowdeep", "Salt Guild", "Maren Holt"),
        "Hesper Lusk": (68, "Brindle", "Lamplighters Guild", "Silas Orme"),
        "Jory Pike": (39, "Solace", "Netmenders Guild", "Tobin Vale"),
        "Maren Holt": (57, "Kelloway", "Salt Guild", "Anselm Dray"),
        "Cassian Reed": (44, "Quillon", "Chartmakers Guild", "Ines Marrow"),
        "Wren Tally": (33, "Tamsk", "Lamplighters Guild", "Petra Quist"),
        "Anselm Dray": (72, "Varra", "Salt Guild", "Hesper Lusk"),
        "Petra Quist": (49, "Ostmere", "Chartmakers Guild", "Anselm Dray"),
        "Silas Orme": (76, "Kelloway", "Lamplighters Guild", "Odile Crane"),
        "Nell Harrow": (64, "Brindle", "Netmenders Guild", "Silas Orme"),
    },
    "ship": {
        "Silver Heron": (24, 310, 1741, "Cassian Reed", "Gullhaven"),
        "Brass Lantern": (41, 520, 1729, "Petra Quist", "Lantern Bay"),
        "Moth Queen": (17, 180, 1752, "Wren Tally", "Hollin"),
        "Tidewalker": (33, 405, 1736, "Jory Pike", "Port Ashby"),
        "Grey Gannet": (28, 260, 1748, "Nell Harrow", "Saltmark"),
    },
    "guild": {
        "Lamplighters Guild": (118, 1620, "Silas Orme", "Lantern Bay"),
        "Netmenders Guild": (264, 1604, "Nell Harrow", "Gullhaven"),
        "Chartmakers Guild": (87, 1641, "Ines Marrow", "Port Ashby"),
        "Salt Guild": (193, 1637, "Odile Crane", "Saltmark"),
    },
    "good": {
        "Amberfish": (36, "Varra"),
        "Glasskelp": (22, "Ostmere"),
        "Bluetin": (58, "Kelloway"),
        "Saltwool": (41, "Brindle"),
        "Emberpeat": (15, "Solace"),
    },
}


def _build() -> dict[str, Entity]:
    entities = {}
    for kind, rows in _ROWS.items():
        for name, values in rows.items():
            attributes = dict(zip(KINDS[kind], values, strict=True))
            entities[name] = Entity(name, kind, MappingProxyType(attributes))
    return entities


ENTITIES: MappingProxyType = MappingProxyType(_build())
