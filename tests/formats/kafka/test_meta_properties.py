from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.errors import FormatError
from replog.formats.kafka import meta_properties as mp
from tests.mutate import rejected_mutations
from tests.realdata import REALDATA, real_files

TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x2FFFF, exclude_categories=("Cs",)), max_size=20)
IDS = st.sampled_from(["3tZY1iwAzpFlSVBhblXsrQ", "XHhkr4tkSsD900pOQ8pPfg", None])


@given(st.dictionaries(TEXT, TEXT, max_size=10))
def test_java_properties_round_trip(props):
    data = mp.build_java_properties(props, when=datetime(2025, 1, 19, 17, 55, 21, tzinfo=UTC))
    assert mp.parse_java_properties(data) == props


@given(st.sampled_from([0, 1]), st.text("abcXYZ_-09", min_size=1, max_size=22), st.integers(-(2**31), 2**31 - 1),
       IDS, st.dictionaries(st.text("abc.", min_size=1, max_size=8), TEXT, max_size=4))
def test_meta_round_trip(version, cluster_id, node_id, directory_id, extra):
    extra = {k: v for k, v in extra.items() if k not in ("version", "cluster.id", "node.id", "broker.id",
                                                        "directory.id")}
    meta = mp.MetaProperties.of(version, cluster_id, node_id, directory_id, extra)
    assert mp.parse_meta_properties(mp.build_meta_properties(meta)) == meta


def test_java_grammar():
    text = (b"# comment\n! also a comment\n\n   \n"
            b"a=1\nb:2\nc 3\nd = 4\ne\t:\t5\n"
            b"f = multi\\\n    line\\\n  value\n"
            b"g\\ h=sp\\u0041ce\\tx\n"
            b"i=\\\\\n"
            b"j==x\n"
            b"k\n"
            b"  l = trailing \n"
            b"m=\xe9\n"
            b"n=one\\\n# not a comment\n"
            b"a=again\n")
    assert mp.parse_java_properties(text) == {
        "a": "again", "b": "2", "c": "3", "d": "4", "e": "5", "f": "multilinevalue", "g h": "spAce\tx",
        "i": "\\", "j": "=x", "k": "", "l": "trailing ", "m": "\u00e9", "n": "one# not a comment"}


def test_crlf_and_cr_line_ends():
    assert mp.parse_java_properties(b"a=1\r\nb=2\rc=3") == {"a": "1", "b": "2", "c": "3"}


def test_malformed_unicode_escape():
    with pytest.raises(FormatError) as e:
        mp.parse_java_properties(b"a=\\u12\n")
    assert e.value.code == "KAFKA_META_PROPERTIES_INVALID"


@pytest.mark.parametrize("data", [
    b"version=2\nnode.id=1\ncluster.id=x\n",
    b"version=1\ncluster.id=x\n",
    b"version=1\nnode.id=1\n",
    b"version=1\nnode.id=one\ncluster.id=x\n",
    b"version=0\nbroker.id=99999999999\n",
    b"version=x\n",
    b"version=1\nnode.id=1\ncluster.id=x\ndirectory.id=nope\n",
])
def test_meta_defects(data):
    with pytest.raises(FormatError) as e:
        mp.parse_meta_properties(data)
    assert e.value.code == "KAFKA_META_PROPERTIES_INVALID"


def test_v0_defaults():
    assert mp.parse_meta_properties(b"broker.id=3\n") == mp.MetaProperties(0, None, 3, None, {"broker.id": "3"})
    assert mp.parse_meta_properties(b"").node_id is None


def test_java_date():
    assert mp.java_date(datetime(2025, 1, 19, 17, 55, 21, tzinfo=UTC)) == "Sun Jan 19 17:55:21 UTC 2025"


def test_mutations_only_raise_format_error():
    good = (b"#\n#Fri Jan 30 16:43:51 UTC 2026\nnode.id=1\ndirectory.id=XHhkr4tkSsD900pOQ8pPfg\n"
            b"version=1\ncluster.id=q\n")
    assert rejected_mutations(mp.parse_meta_properties, good, seed=2, rounds=400, alphabet=b"\\=:#! \n\rux0129") > 0


def test_real_files_rebuild_byte_exact():
    files = real_files("**/meta.properties")
    for path in files:
        data = path.read_bytes()
        meta = mp.parse_meta_properties(data)
        date_text = data.split(b"\n")[1].decode("latin-1")[1:]
        assert mp.build_meta_properties(meta, when=date_text) == data, path
    niloufar = REALDATA / "niloufar-ldi-kraft/meta.properties"
    if niloufar.exists():
        meta = mp.parse_meta_properties(niloufar.read_bytes())
        assert (meta.version, meta.node_id, meta.cluster_id, meta.directory_id) == (
            1, 1, "q1w2e3r4t5y6u7i8o9p0", "XHhkr4tkSsD900pOQ8pPfg")
