"""How a judge is named: ``--judge NAME=SPEC``, the project file's ``[judges.NAME]`` tables,
``--judge NAME`` naming one of them, ``ragtui config`` showing them, and ``build_judge`` for every
kind. Bad input is one line on stderr naming the file, the line and the key, and exit 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragtui.cli import main
from ragtui.core.errors import InputError
from ragtui.core.judge_spec import (
    JudgeSpec,
    parse_judge_flag,
    parse_judge_section,
    resolve_judges,
)
from ragtui.core.judges.build import build_judge, judge_shares
from ragtui.core.judges.local import CrossEncoderJudge, SimilarityJudge
from ragtui.core.judges.plugins import PluginJudge
from ragtui.core.options import settings_from_values
from ragtui.core.project import effective_settings, load_project
from ragtui.core.settings import Settings

LLM = """\
k = 3

[judges.llm]
url = "http://127.0.0.1:11434/v1"   # any OpenAI-compatible endpoint
model = "qwen2.5:7b-instruct"
api_key_env = "OPENAI_API_KEY"
prompt = "judge-prompt.txt"
timeout = 30
concurrency = 4
retries = 2
max-tokens = 200

[judges.sim]
kind = "similarity"
thresholds = [0.45, 0.6]

[judges.ce]
path = "models/ce"

[judges.mine]
factory = "mypackage.judging:make"
options = {temperature = 0}
timeout = 5

[judges.theirs]
entry-point = "theirjudge"
"""


def _main(argv: list[str]) -> int | str | None:
    """``ragtui ARGV`` in this process: its exit code (argparse's usage errors exit by SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


def _write(folder: Path, text: str) -> Path:
    path = folder / "ragtui.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o644)
    return path


# ---- --judge NAME=SPEC ------------------------------------------------------------------------------


def test_every_flag_form_is_read():
    openai = parse_judge_flag("llm=openai:qwen2.5:7b-instruct@http://127.0.0.1:11434/v1")
    assert isinstance(openai, JudgeSpec)
    assert (openai.kind, openai.target, dict(openai.options)) == (
        "openai",
        "qwen2.5:7b-instruct",
        {"url": "http://127.0.0.1:11434/v1"},
    )
    # A URL with user info keeps its @: the model ends at the last @ before http(s)://.
    tricky = parse_judge_flag("x=openai:org/model@v2@https://u:p@host/v1")
    assert isinstance(tricky, JudgeSpec)
    assert (tricky.target, tricky.options["url"]) == ("org/model@v2", "https://u:p@host/v1")
    forms = {
        "sim=similarity": ("similarity", ""),
        "ce=cross-encoder:/models/ce": ("cross-encoder", "/models/ce"),
        "mine=mypackage.judging:make": ("plugin", "mypackage.judging:make"),
        "theirs=theirjudge": ("entry-point", "theirjudge"),
    }
    for text, (kind, target) in forms.items():
        spec = parse_judge_flag(text)
        assert isinstance(spec, JudgeSpec)
        assert (spec.kind, spec.target, spec.source) == (kind, target, "--judge")
        assert str(spec) == text  # what ragtui config shows, and serve passes on
    assert parse_judge_flag("llm") == "llm"  # a name of the project file's


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("x=openai:qwen", "expected openai:MODEL@URL with an http(s) URL"),
        ("x=openai:@http://h/v1", "expected openai:MODEL@URL"),
        ("x=openai:m@ftp://h", "expected openai:MODEL@URL"),
        ("x=openai", "expected openai:MODEL@URL"),
        ("x=cross-encoder:", "expected cross-encoder:PATH"),
        ("x=http://h/v1", "a URL is given as openai:MODEL@URL"),
        ("x=not a spec", "is none of openai:MODEL@URL"),
        ("x=openai:@http://user:pw@h", "--judge 'x=openai:@http://***@h'"),
        ("x=", "expected NAME=SPEC"),
        ("=similarity", "expected NAME=SPEC"),
        ("vector=similarity", "'vector' is a built-in retriever's name"),
        ("../x=similarity", "may hold only letters, digits"),
        ("___=similarity", "may hold only letters, digits"),
    ],
)
def test_a_bad_flag_is_one_line(text, problem):
    with pytest.raises(InputError) as info:
        parse_judge_flag(text)
    assert problem in info.value.message
    assert "\n" not in info.value.message and ":pw@" not in info.value.message


def test_bad_flags_exit_2_with_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv, problem in (
        (["--judge", "x=openai:qwen"], "expected openai:MODEL@URL"),
        (["--judge", "a=similarity", "--judge", "a=similarity"], "'a' is given twice"),
        (["--judge", "llm"], "--judge llm: no project file is in force to define it"),
    ):
        assert _main(["config", *argv]) == 2
        err = capsys.readouterr().err
        assert problem in err and err.count("\n") == 1 and "Traceback" not in err


# ---- [judges.NAME] ------------------------------------------------------------------------------------


def test_every_kind_of_section_is_read(tmp_path):
    path = _write(tmp_path, LLM)
    (tmp_path / "models" / "ce").mkdir(parents=True)
    specs = {spec.name: spec for spec in load_project(path).values["judges"]}
    assert list(specs) == ["llm", "sim", "ce", "mine", "theirs"]
    llm = specs["llm"]
    assert (llm.kind, llm.target) == ("openai", "qwen2.5:7b-instruct")
    assert dict(llm.options) == {
        "url": "http://127.0.0.1:11434/v1",
        "api_key_env": "OPENAI_API_KEY",
        "prompt": tmp_path.resolve() / "judge-prompt.txt",  # relative to the file's folder
        "timeout": 30.0,
        "concurrency": 4,
        "retries": 2,
        "max_tokens": 200,
    }
    assert llm.source == f"{path} [judges.llm]"
    assert (specs["sim"].kind, specs["sim"].options["thresholds"]) == ("similarity", (0.45, 0.6))
    # A folder beside the project file is found from anywhere.
    assert (specs["ce"].kind, specs["ce"].target) == (
        "cross-encoder",
        str(tmp_path.resolve() / "models" / "ce"),
    )
    assert (specs["mine"].kind, specs["mine"].target) == ("plugin", "mypackage.judging:make")
    assert dict(specs["mine"].options) == {"options": {"temperature": 0}, "timeout": 5.0}
    assert (specs["theirs"].kind, specs["theirs"].target) == ("entry-point", "theirjudge")


def test_dashes_and_underscores_are_the_same_in_a_judge_key():
    spec = parse_judge_section(
        "llm", {"url": "http://h/v1", "model": "m", "api-key-env": "K", "max_tokens": 9}
    )
    assert (spec.options["api_key_env"], spec.options["max_tokens"]) == ("K", 9)


@pytest.mark.parametrize(
    ("body", "line", "problem"),
    [
        # The key is refused without its value ever being shown.
        (
            'url = "http://h/v1"\nmodel = "m"\napi_key = "sk-SECRET-123"\n',
            6,
            (
                "[judges.llm] api_key: a key is never read from the project file: put it in an "
                'environment variable and name the variable with api_key_env = "VARIABLE"'
            ),
        ),
        ('url = "http://h/v1"\n', 3, "[judges.llm] an openai judge needs model"),
        ('url = "ftp://h"\nmodel = "m"\n', 4, "[judges.llm] url: must start with http://"),
        ('url = "http://h/v1"\nmodel = "m"\ntimeout = 0\n', 6, "[judges.llm] timeout: must be a"),
        ('url = "http://h/v1"\nmodel = "m"\nretries = -1\n', 6, "[judges.llm] retries: must be"),
        (
            'url = "http://h/v1"\nmodel = "m"\nconcurrency = 1.5\n',
            6,
            "concurrency: must be a whole",
        ),
        (
            'url = "http://h/v1"\nmodel = "m"\napi_key_env = "MY KEY"\n',
            6,
            "must name an environment",
        ),
        ('url = "http://h/v1"\nmodel = "m"\nthresholds = [1]\n', 6, "thresholds: not a key of a"),
        ('kind = "similarity"\nthresholds = [0.6, 0.4]\n', 5, "thresholds: must rise"),
        ('kind = "similarity"\nthresholds = "high"\n', 5, "thresholds: must be a list"),
        ('kind = "similarity"\npath = "x"\n', 5, "path: not a key of a similarity judge"),
        ('kind = "llama"\n', 4, "kind: 'llama' is not one of openai, cross-encoder"),
        ("thresholds = [0.5]\n", 3, "say which judge it is"),
        ('url = "http://h"\nfactory = "a:b"\n', 5, "give one of url, path, factory"),
        ('factory = "not a factory"\n', 4, "factory: must be package.module:function"),
        ('factory = "a:b"\noptions = 3\n', 5, "options: must be a table"),
        ('entry-point = "x"\nurl_ = 1\n', 5, "url_: not a key of an entry-point judge"),
    ],
)
def test_a_bad_section_is_one_line_naming_file_line_and_key(
    tmp_path, capsys, monkeypatch, body, line, problem
):
    path = _write(tmp_path, "k = 3\n\n[judges.llm]\n" + body)
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ragtui: error: ragtui.toml:{line}: ") and problem in err
    assert err.count("\n") == 1
    assert "SECRET" not in err
    with pytest.raises(InputError) as info:
        load_project(path)
    assert info.value.line == line


def test_a_bad_judge_name_in_the_file_and_in_pyproject(tmp_path, capsys, monkeypatch):
    _write(tmp_path, 'k = 3\n[judges.vector]\nkind = "similarity"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 2
    assert capsys.readouterr().err == (
        "ragtui: error: ragtui.toml:2: [judges.vector] 'vector' is a built-in retriever's name; "
        "give your judge another name\n"
    )
    (tmp_path / "ragtui.toml").unlink()
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\n\n[tool.ragtui.judges.sim]\nkind = "similarity"\nthresholds = 1\n'
    )
    pyproject.chmod(0o644)
    assert main(["config"]) == 2
    assert capsys.readouterr().err.startswith(
        "ragtui: error: pyproject.toml:6: [tool.ragtui.judges.sim] thresholds: must be a list"
    )


# ---- --judge NAME, and what config shows ----------------------------------------------------------


def test_judge_name_picks_the_files_judge_and_flags_replace_the_files(tmp_path):
    project = load_project(_write(tmp_path, LLM))
    everything = effective_settings({}, project)
    assert [s.name for s in everything.settings.judges] == ["llm", "sim", "ce", "mine", "theirs"]
    assert everything.sources["judges"] == f"{project.path}:[judges]"
    named = effective_settings({"judges": ["sim", parse_judge_flag("quick=similarity")]}, project)
    assert [(s.name, s.source) for s in named.settings.judges] == [
        ("sim", f"{project.path} [judges.sim]"),
        ("quick", "--judge"),
    ]
    assert named.settings.judges[0].options["thresholds"] == (0.45, 0.6)
    assert named.sources["judges"] == "flag --judge"
    with pytest.raises(InputError, match=r"has no \[judges.nope\] \(its judges: llm, sim, ce"):
        effective_settings({"judges": ["nope"]}, project)
    with pytest.raises(InputError, match="'sim' is given twice"):
        effective_settings({"judges": ["sim", parse_judge_flag("sim=similarity")]}, project)
    # Code calling the options directly cannot pass a name nobody resolved.
    with pytest.raises(InputError, match="a name alone names a"):
        settings_from_values({"judges": ["sim"]})


def test_config_shows_the_judges_and_where_they_came_from(tmp_path, capsys, monkeypatch):
    _write(tmp_path, LLM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-NEVER-SHOWN")
    assert main(["config"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("judges"))
    assert "llm=openai:qwen2.5:7b-instruct@http://127.0.0.1:11434/v1; sim=similarity" in row
    assert row.rstrip().endswith("ragtui.toml:[judges]")
    assert main(["config", "--judge", "sim", "--judge", "x=openai:m@http://u:pw@h/v1"]) == 0
    shown = capsys.readouterr().out
    row = next(line for line in shown.splitlines() if line.startswith("judges"))
    assert "sim=similarity; x=openai:m@http://***@h/v1" in row  # user info masked
    assert row.rstrip().endswith("flag --judge")
    assert "NEVER-SHOWN" not in shown and "pw" not in shown


def test_a_project_file_judge_runs_nothing_until_used(tmp_path, capsys, monkeypatch):
    """A plugin that does not exist, a folder that does not exist: config and eval never look."""
    _write(
        tmp_path,
        'k = 3\n[judges.gone]\nfactory = "no_such_module_anywhere:make"\n'
        '[judges.ce]\npath = "no/such/folder"\n',
    )
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 0
    assert "gone=no_such_module_anywhere:make" in capsys.readouterr().out


# ---- building every kind ------------------------------------------------------------------------------


def test_build_judge_dispatches_every_kind(tmp_path, tiny_cross_encoder):
    settings = Settings()
    sim = build_judge(JudgeSpec("sim", "similarity"), settings)
    assert isinstance(sim, SimilarityJudge)
    assert (sim.name, sim.model_id, sim.prompt_sha1) == ("sim", "all-MiniLM-L6-v2", "")
    ce = build_judge(JudgeSpec("ce", "cross-encoder", str(tiny_cross_encoder)), settings)
    assert isinstance(ce, CrossEncoderJudge)
    assert ce.model_id == tiny_cross_encoder.name  # the folder's name
    plugin = build_judge(JudgeSpec("p", "plugin", "os.path:join"), settings)
    assert isinstance(plugin, PluginJudge) and not plugin.loaded  # nothing imported or called
    llm = build_judge(
        JudgeSpec("llm", "openai", "qwen2.5:7b-instruct", {"url": "http://127.0.0.1:9/v1"}),
        settings,
    )
    assert (llm.name, llm.model_id) == ("llm", "qwen2.5:7b-instruct")
    llm.close()


def test_build_judge_refuses_what_cannot_exist_in_one_line(tmp_path):
    settings = Settings()
    for spec, problem in (
        (
            JudgeSpec("ce", "cross-encoder", str(tmp_path / "nothing")),
            f"--judge ce: {tmp_path / 'nothing'}: cross-encoder folder not found",
        ),
        (
            JudgeSpec("p", "plugin", "no_such_module_anywhere:make", source="x.toml [judges.p]"),
            "x.toml [judges.p]: cannot import no_such_module_anywhere (ModuleNotFoundError",
        ),
        (
            JudgeSpec("e", "entry-point", "no-such-judge"),
            "--judge e: 'no-such-judge' is no entry point of group ragtui.judges",
        ),
    ):
        with pytest.raises(InputError) as info:
            build_judge(spec, settings)
        assert problem in info.value.message, info.value.message


def test_judge_shares_names_the_retrievers_on_the_judges_model(tiny_cross_encoder):
    default = Settings()
    assert judge_shares("all-MiniLM-L6-v2", default) == ("vector", "hybrid")
    assert judge_shares("/models/all-MiniLM-L6-v2/", default) == ("vector", "hybrid")
    assert judge_shares("qwen2.5:7b-instruct", default) == ()
    assert judge_shares("all-MiniLM-L6-v2", Settings(retrievers=("bm25",))) == ()
    reranked = Settings(rerank=str(tiny_cross_encoder), rerank_over="bm25")
    assert judge_shares(tiny_cross_encoder.name, reranked) == ("bm25+rerank",)
    sim = build_judge(JudgeSpec("sim", "similarity"), default)
    assert isinstance(sim, SimilarityJudge) and judge_shares(sim.model_id, default) == (
        "vector",
        "hybrid",
    )


def test_resolve_judges_keeps_the_order_given():
    defined = (JudgeSpec("a", "similarity"), JudgeSpec("b", "similarity"))
    assert [s.name for s in resolve_judges(["b", "a"], defined, "ragtui.toml")] == ["b", "a"]


def test_serve_passes_judges_on_as_the_flags_were_given():
    from ragtui.cli.main import build_parser
    from ragtui.cli.serve import app_argv

    args = build_parser().parse_args(
        ["serve", "--judge", "sim=similarity", "--judge", "llm=openai:m@http://h:1/v1"]
    )
    argv = app_argv(args)
    assert argv[argv.index("--judge") :][:4] == [
        "--judge",
        "sim=similarity",
        "--judge",
        "llm=openai:m@http://h:1/v1",
    ]
    assert os.path.basename(argv[0]).startswith("python")


def test_a_commands_own_judge_option_wins_over_the_shared_one():
    """``agreement --judge NAME`` (one judge's tables) beside the shared ``--judge NAME=SPEC``:
    before, the parser could not be built at all (argparse's conflicting option string)."""
    from ragtui.cli.main import build_parser

    agreement = build_parser().parse_args(["agreement", "--judge", "llm"])
    assert agreement.agreement_judge == "llm" and not hasattr(agreement, "judges")
    judge = build_parser().parse_args(["judge", "--judge", "sim=similarity"])
    assert [str(s) for s in judge.judges] == ["sim=similarity"]


def test_a_name_alone_in_the_files_judges_list_is_one_line(tmp_path, capsys, monkeypatch):
    """``judges = ["llm"]`` at the top level (no [judges.llm] can be beside it): before, a
    traceback (the name was taken for a judge); now one line naming the file, line and key."""
    _write(tmp_path, 'k = 3\njudges = ["sim=similarity", "llm"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 2
    assert capsys.readouterr().err == (
        "ragtui: error: ragtui.toml:2: judges: 'llm' names no judge here: give NAME=SPEC, "
        "or a [judges.llm] table\n"
    )
    # A judge of the file's list is named as a table's is.
    _write(tmp_path, 'k = 3\njudges = ["sim=similarity"]\n')
    assert main(["config", "--judge", "sim"]) == 0
    assert "sim=similarity" in capsys.readouterr().out
    assert main(["config", "--judge", "llm"]) == 2
    assert (
        "--judge llm: ragtui.toml has no [judges.llm] (its judges: sim)" in capsys.readouterr().err
    )
