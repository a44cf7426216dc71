from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.formats.codes import CODES
from replog.formats.errors import FormatError
from replog.formats.rocketmq.config_json import dumps, load_config, loads, write_config
from tests.realdata import REALDATA

REAL = REALDATA

keys = st.one_of(st.integers(-2**40, 2**40), st.text(max_size=8))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)),
                      max_leaves=20)


@given(st.dictionaries(keys, values, max_size=5))
def test_round_trip(value: dict) -> None:
    assert loads(dumps(value)) == value


def test_fastjson_bare_integer_keys() -> None:
    text = '{\n\t"offsetTable":{\n\t\t"T@g":{0:250,1:250,-3:7\n\t\t},\n\t\t"x":{}\n\t}\n}'
    assert loads(text) == {"offsetTable": {"T@g": {0: 250, 1: 250, -3: 7}, "x": {}}}
    assert loads('{"a":[1,2.5,true,null,"s\\u0041"]}') == {"a": [1, 2.5, True, None, "sA"]}
    assert dumps({"t": {0: 1}}) == '{\n\t"t":{\n\t\t0:1\n\t}\n}'


@pytest.mark.parametrize("bad", ["", "{", '{"a" 1}', "{a:}", "[1,]", '{"a":1} x', "[" * 5000, '"\\x"'])
def test_malformed(bad: str) -> None:
    with pytest.raises(FormatError) as e:
        loads(bad)
    assert e.value.code == "ROCKETMQ_CONFIG_INVALID"


@given(st.text(alphabet='{}[]:,"0123456789abtrufnl -\\\n', max_size=40))
def test_random_text_only_format_error(text: str) -> None:
    try:
        loads(text)
    except FormatError as e:
        assert e.code in CODES  # only a located, registered format error may come out


def test_bak_fallback(tmp_path: Path) -> None:
    p = tmp_path / "topics.json"
    write_config(tmp_path / "topics.json.bak", {"a": {1: 2}})
    p.write_text("{broken")
    assert load_config(p) == ({"a": {1: 2}}, tmp_path / "topics.json.bak")


@pytest.mark.realdata
def test_real_config_files() -> None:
    files = sorted(REAL.glob("rocketmq-*/**/config/*.json"))
    if not files:
        pytest.skip("real data absent")
    for f in files:
        data, used = load_config(f)
        assert used == f and loads(dumps(data)) == data
        text = f.read_text()
        if "{0:" not in text:
            assert data == json.loads(text)  # plain JSON files parse the same as with json
    offsets, _ = load_config(REAL / "rocketmq-shaoxubao/store/config/consumerOffset.json")
    assert offsets["offsetTable"]["TopicTest@please_rename_unique_group_name_4"] == {0: 250, 1: 250, 2: 250, 3: 250}
    topics, _ = load_config(REAL / "rocketmq-shaoxubao/store/config/topics.json")
    assert topics["topicConfigTable"]["TopicTest"]["readQueueNums"] == 4
