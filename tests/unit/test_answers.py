"""routectl.answers: a cloud's JSON read by type; a value of the wrong shape names itself."""

from __future__ import annotations

import pytest

from routectl.answers import Answer
from routectl.errors import MalformedAnswerError, ProviderError

BODY = {
    "network": {
        "id": 7,
        "routes": [{"destination": "10.244.1.0/24", "gateway": "10.0.1.1"}, "junk"],
        "labels": None,
        "protected": False,
    }
}


def answer() -> Answer:
    return Answer(BODY, what="Cloud GET /networks/7")


def test_fields_of_the_right_shape_are_read() -> None:
    network = answer().field("network")
    assert network.field("id").integer() == 7
    (first, _) = network.field("routes").items()
    assert first.field("gateway").text() == "10.0.1.1"
    assert network.field("labels").missing
    assert network.field("labels").items() == []
    assert network.field("absent").text(default="") == ""
    assert network.field("protected").flag() is False


@pytest.mark.parametrize(
    ("read", "path", "said"),
    [
        (
            lambda a: a.field("network").field("routes").items()[1].field("gateway"),
            "network.routes[1]",
            "is a string 'junk', expected an object",
        ),
        (
            lambda a: a.field("network").field("id").text(),
            "network.id",
            "is a number 7, expected a string",
        ),
        (
            lambda a: a.field("network").field("protected").integer(),
            "network.protected",
            "expected an integer",
        ),
        (lambda a: a.field("network").field("routes").field("x"), "network.routes", "is a list"),
        (
            lambda a: a.field("network").field("routes").items()[0].field("destination").flag(),
            "network.routes[0].destination",
            "expected true or false",
        ),
        (lambda a: a.field("network").field("absent").integer(), "network.absent", "is null"),
    ],
)
def test_a_value_of_the_wrong_shape_is_one_error_naming_it(read, path: str, said: str) -> None:
    with pytest.raises(MalformedAnswerError) as caught:
        read(answer())
    assert isinstance(caught.value, ProviderError), "transient, like any garbled answer"
    assert caught.value.field == path
    assert str(caught.value).startswith(f"Cloud GET /networks/7: malformed answer: {path} ")
    assert said in str(caught.value)


def test_a_top_level_value_of_the_wrong_shape_says_the_answer() -> None:
    with pytest.raises(MalformedAnswerError, match="the answer is a string"):
        Answer("<html>", what="Cloud GET /x").field("routes")


def test_a_cidr_is_read_as_given_and_anything_else_is_named() -> None:
    routes = answer().field("network").field("routes")
    assert routes.items()[0].field("destination").cidr() == "10.244.1.0/24"
    with pytest.raises(MalformedAnswerError) as wrong:
        routes.items()[0].field("gateway").cidr()
    assert str(wrong.value) == (
        "Cloud GET /networks/7: malformed answer: network.routes[0].gateway is '10.0.1.1', "
        "expected a CIDR"
    )
    assert wrong.value.field == "network.routes[0].gateway"
    with pytest.raises(MalformedAnswerError, match="id is a number 7, expected a string"):
        answer().field("network").field("id").cidr()
