"""The training view's language identifier (crawler.content.language): real text in five
languages and more, empty text, determinism across processes and threads, Markdown whose
code and links are not its language, and no network."""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import subprocess
import sys

import pytest

from crawler.content import language
from crawler.content.language import MAX_CHARS, identify, prose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PARAGRAPHS = {
    "en": (
        "The library on Elm Street will close for renovation at the end of the month. Readers can "
        "return borrowed books to the branch near the station until the building reopens in the "
        "spring. The reading room upstairs will get new windows and a lift."
    ),
    "de": (
        "Die Stadtbibliothek in der Ulmenstraße schließt Ende des Monats wegen Umbauarbeiten. "
        "Ausgeliehene Bücher können bis zur Wiedereröffnung im Frühjahr in der Zweigstelle am "
        "Bahnhof zurückgegeben werden. Der Lesesaal im Obergeschoss bekommt neue Fenster."
    ),
    "fr": (
        "La bibliothèque de la rue des Ormes fermera pour travaux à la fin du mois. Les lecteurs "
        "pourront rendre les livres empruntés à l'annexe près de la gare jusqu'à sa réouverture au "
        "printemps. La salle de lecture de l'étage aura de nouvelles fenêtres."
    ),
    "es": (
        "La biblioteca de la calle de los Olmos cerrará por obras a finales de mes. Los lectores "
        "podrán devolver los libros prestados en la sucursal junto a la estación hasta que el "
        "edificio vuelva a abrir en primavera. La sala de lectura tendrá ventanas nuevas."
    ),
    "pl": (
        "Biblioteka przy ulicy Wiązowej zostanie pod koniec miesiąca zamknięta z powodu remontu. "
        "Czytelnicy mogą zwracać wypożyczone książki w filii przy dworcu aż do ponownego otwarcia "
        "budynku wiosną. Czytelnia na piętrze dostanie nowe okna i windę."
    ),
    "it": (
        "La biblioteca di via degli Olmi chiuderà per lavori alla fine del mese. I lettori potranno "
        "restituire i libri presi in prestito alla succursale vicino alla stazione fino alla "
        "riapertura dell'edificio in primavera."
    ),
    "nl": (
        "De bibliotheek in de Iepenstraat gaat eind deze maand dicht voor een verbouwing. Lezers "
        "kunnen geleende boeken tot de heropening in het voorjaar inleveren bij het filiaal naast "
        "het station."
    ),
    "ru": (
        "Библиотека на Вязовой улице закроется на ремонт в конце месяца. Читатели смогут вернуть "
        "взятые книги в филиал у вокзала, пока здание не откроется снова весной."
    ),
    "ja": (
        "エルム通りの図書館は月末から改装のため休館します。借りた本は、春に再開するまで駅前の分館に"
        "返却できます。二階の閲覧室には新しい窓とエレベーターが付きます。"
    ),
}

# German prose around an English code block, code spans and links with English URLs
MARKDOWN_PAGE = """# Installation

Bevor Sie beginnen, prüfen Sie bitte, ob Python in der Version 3.11 oder neuer installiert
ist. Die Anleitung für [die Einrichtung unter Windows](https://example.org/docs/setup/windows-installation-guide.html)
finden Sie im [Handbuch](https://example.org/manual/getting-started/index.html).

```python
def main(argv: list[str]) -> int:
    \"\"\"Parse the command line, read the configuration and start the server.\"\"\"
    parser = argparse.ArgumentParser(description="Start the web server and watch the files")
    parser.add_argument("--port", type=int, default=8080, help="the port to listen on")
    parser.add_argument("--watch", action="store_true", help="reload the server when a file changes")
    parser.add_argument("--config", default="server.toml", help="the configuration file to read")
    # the configuration file overrides the defaults, the command line overrides the file
    return run_server(parser.parse_args(argv))


def run_server(options: argparse.Namespace) -> int:
    \"\"\"Serve the files of the current folder until the process is interrupted.\"\"\"
    with open(options.config) as config_file:
        settings = load_settings(config_file, defaults={"workers": 4, "timeout": 30})
    return serve_forever(settings, port=options.port, watch=options.watch)
```

Mit `pip install --upgrade example-server` wird das Paket aktualisiert. Danach starten Sie den
Server mit `example-server --port 8080` und öffnen <https://localhost:8080/dashboard/overview> im Browser.

```text
$ example-server --port 8080 --watch
Reading the configuration from server.toml
Listening on http://localhost:8080 with 4 workers, press Ctrl+C to stop
Watching 12 files for changes
```

| Option | Default | Description |
| --- | --- | --- |
| `--port` | `8080` | the port to listen on |
"""


@pytest.mark.parametrize("code", sorted(PARAGRAPHS))
def test_identifies_natural_paragraphs(code):
    found, score = identify(PARAGRAPHS[code])
    assert found == code
    assert 0.5 < score <= 1.0


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n", "1234 5678 — 2024-05-06", "```\nx = 1\n```", "[](http://h/a)"])
def test_empty_or_letterless_text_is_undecided(text):
    assert identify(text) == (None, 0.0)


def test_markdown_page_is_identified_by_its_prose():
    code, score = identify(MARKDOWN_PAGE)
    assert code == "de" and score > 0.9
    # the page as it is leaves the model unsure: its code, commands and URLs are English
    assert language._model().detect(" ".join(MARKDOWN_PAGE.split()), model="lite")[0]["score"] < 0.5
    kept = prose(MARKDOWN_PAGE)
    assert "Bevor Sie beginnen" in kept and "die Einrichtung unter Windows" in kept
    for gone in ("def main", "argparse", "https://", "example.org", "pip install", "localhost", "```", "|", "#"):
        assert gone not in kept


def test_prose_is_cut_at_a_space_within_the_limit():
    text = " ".join(["Bibliothek"] * 1000)
    kept = prose(text)
    assert len(kept) <= MAX_CHARS and kept.endswith("Bibliothek")
    assert prose(text, 25) == "Bibliothek Bibliothek"
    assert prose("x" * 50, 20) == "x" * 20  # no space to cut at
    assert prose("# Title\n\n**bold** and _it_ ~~gone~~") == "Title bold and it gone"
    hyphenated = "Es be\u00adste\u00adhen mar\u200bkante Un\ufeffter\u00adschiede"  # soft, zero-width
    assert prose(hyphenated) == "Es bestehen markante Unterschiede"


def test_only_the_first_characters_count():
    english = PARAGRAPHS["en"] + " " + PARAGRAPHS["en"]
    tail = " ".join([PARAGRAPHS["de"]] * 40)
    assert identify(" ".join([english] * (MAX_CHARS // len(english) + 1)) + " " + tail)[0] == "en"


def test_same_answer_in_every_thread():
    texts = list(PARAGRAPHS.values()) + [MARKDOWN_PAGE]
    alone = [identify(t) for t in texts]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        rounds = list(pool.map(lambda _: [identify(t) for t in texts], range(8)))
    assert all(found == alone for found in rounds)


def test_same_answer_in_another_process():
    """A fresh interpreter (another hash seed, the model loaded anew) gives equal codes and
    scores."""
    texts = list(PARAGRAPHS.values()) + [MARKDOWN_PAGE]
    script = (
        "import json, sys; from crawler.content.language import identify; "
        "print(json.dumps([identify(t) for t in json.load(sys.stdin)]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": ROOT}
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(texts), capture_output=True, text=True, env=env, check=True
    )
    assert [tuple(pair) for pair in json.loads(done.stdout)] == [identify(t) for t in texts]


def test_no_network(monkeypatch):
    """The model ships in the package: a fresh detector loads and answers with sockets refused."""

    def refused(*args, **kwargs):
        raise AssertionError("the language identifier opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)
    monkeypatch.setattr(language, "_detector", None)  # loaded again, here
    assert identify(PARAGRAPHS["fr"])[0] == "fr"
