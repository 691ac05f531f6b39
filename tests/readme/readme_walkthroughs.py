#!/usr/bin/env python3
"""The walkthroughs of the README and of docs/, run as a reader runs them, so that the user
documentation cannot go stale.

A walkthrough is the part of README.md, or of a Markdown file under docs/, after a marker
comment

    <!-- walkthrough: NAME [option ...] -->

up to the next walkthrough marker, `<!-- walkthrough: end -->` or the end of the file. NAME is
unique over all the files, and CMakeLists.txt registers each (--registered checks that no
marked walkthrough goes unrun). Its code blocks are run in
one bash, in order, with PATH=<dir of tide>:$PATH, in a scratch copy of the repository's
examples/, policies/ and scripts/, against a `tide serve` the harness starts there on a free
port (data dir ./.tide; TIDE_SERVER and TIDE_TOKEN point the CLI at it):

  ```sh blocks       every command runs; it must exit 0.
  ``` blocks of      each `$ command` runs and what follows it, up to the next `$`, is what it
  `$ ` lines         prints: checked line by line (below). A command that prints an `error:`
                     line must exit non-zero, every other one 0. A read-only command (a list,
                     a show, a cat, a curl...) whose output does not match yet runs again
                     until it does, as a person would look again.
  ``` blocks after   the output of the sh block's last command.
  a sh block
  ```yaml, ```lua    prose: not run (a `write-files` marker writes them).

Output is compared after normalisation: times, durations, host ports and whitespace runs are
made uniform, `...` stands for anything, and the values a run draws itself (instance names,
token secrets) are bound at their first appearance and must then be the same everywhere,
commands included (`export ALICE=<the secret printed above>` uses the real secret). Lines
that depend on timing are not compared: a watch's IN_PROGRESS lines, and the output of a
command whose comment says, in parentheses, that its columns are cut or its figures vary.
Every other expected line must appear, in order. An expected output ending in `^C` is the output of a command a person interrupts: it
runs until its lines have appeared, then gets SIGINT.

Markers inside a walkthrough, for what a person does by hand:

    <!-- walkthrough: restart-host -->          stop the host (SIGINT) and start it again
    <!-- walkthrough: skip REASON -->           the next code block is not run (nor the
                                                `before` markers aimed at it)
    <!-- walkthrough: run COMMAND -->           run COMMAND (may span lines up to -->),
                                                e.g. from "another shell"; must exit 0
    <!-- walkthrough: write-files -->           the next block holds files, each headed by a
                                                `-- path` or `# path` line: write them
    <!-- walkthrough: before TEXT => COMMAND -->  run COMMAND before the next block's first
                                                command that holds TEXT (waiting, say, for
                                                what a person would wait for)
    <!-- walkthrough: unbind VALUE ... -->       forget what these drawn values stood for:
                                                which instance a rollout kept, say, varies
    <!-- walkthrough: bind VALUE = COMMAND -->   VALUE stands for what COMMAND prints (an
                                                instance the text names before any output)
    <!-- walkthrough: skip-outside FROM TO REASON -->  skip the next block unless the time
                                                (UTC, RFC 3339) is in [FROM, TO): output that
                                                depends on the date, such as a freeze

The bash's HOME holds `tide`, the repository (what a reader cloned to ~/tide).

Walkthrough options: `no-host` (the walkthrough starts its own), `port-block=PORT` (its
workloads use fixed ports: hold the block of tests/support/ports.h that has PORT, so no test
beside it takes them), `free-ports=P,Q` (ports the walkthrough's own programs listen on: fail
at once when something else holds them), `needs=P,Q` (programs the walkthrough runs, such
as podman: where one is not on PATH the walkthrough is reported skipped, with the reason, and
the run exits 77, which ctest counts as skipped), `all-policies` (with
policies/change_freeze.lua, which the harness otherwise leaves out: its Black Friday and year
end windows deny everything, as docs/approvals.md says), `config=FILE` (tide serve --config FILE,
relative to the scratch copy).

A failure names the file and line of the command, what ran, and the difference; the scratch
dir is kept with the host's log (serve.log). Exit 0 when every walkthrough passed.

  tests/readme/readme_walkthroughs.py --tide build/tide --source . [--only NAME ...] [--list]
"""

import argparse
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))
from test_host import free_port, kill_workloads_of, port_block, port_block_at  # noqa: E402

kSkipped = 77  # every walkthrough run was skipped (ctest's SKIP_RETURN_CODE)

# Bounds a hang on a loaded two-core machine; nothing is timed against them.
kStepDeadlineSeconds = 300
kLookAgainSeconds = 90  # how long a read-only command is run again until its output matches
kHostDeadlineSeconds = 120

def port_is_free(port):
    """Whether nothing listens on 127.0.0.1:`port`. A connection is tried rather than a bind:
    the TIME_WAIT connections a walkthrough's host left a moment ago refuse a bind, but not
    the next host (it binds with SO_REUSEADDR and SO_REUSEPORT, as cpp-httplib does)."""
    with socket.socket() as s:
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            return False
        except ConnectionRefusedError:
            return True
        except OSError:
            return False


# --- the documents, parsed -----------------------------------------------------------------

class Step:
    """One thing to do: a command (with what it should print), or a marker's action."""

    def __init__(self, kind, line, command="", expected=None, checked=True):
        self.kind = kind            # "command", "restart-host"
        self.line = line            # where it is written: "README.md:42"
        self.command = command
        self.expected = expected    # list of lines, or None: output not compared
        self.checked = checked      # False: output not compared (columns cut)


class Walkthrough:
    def __init__(self, name, line, options):
        self.name = name
        self.line = line            # "docs/approvals.md:120"
        self.options = options
        self.steps = []


kMarker = re.compile(r"^<!--\s*walkthrough:\s*(.*?)\s*(-->)?$")
kFence = re.compile(r"^```(\w*)\s*$")
kHeredoc = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")


def goes_on(text):
    """Whether a command's last line continues on the next: it ends with `\\` or `|`, before
    any comment."""
    last = re.sub(r"\s+#[^'\"]*$", "", text.splitlines()[-1]).rstrip()
    return last.endswith("\\") or last.endswith("|")


def split_commands(lines, first_line):
    """(line number, command) for each shell command of `lines`: a line ending in `\\` or `|`
    goes on, and a here-document takes the lines up to its terminator."""
    commands = []
    i = 0
    while i < len(lines):
        start = i
        text = lines[i]
        while goes_on(text) and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        heredoc = kHeredoc.search(text)
        if heredoc:
            while i + 1 < len(lines):
                i += 1
                text += "\n" + lines[i]
                if lines[i].strip() == heredoc.group(1):
                    break
        if text.strip() and not text.strip().startswith("#"):
            commands.append((first_line + start, text))
        i += 1
    return commands


def transcript_steps(lines, first_line, at):
    """The `$ command` lines of a transcript block, each with the lines it prints."""
    steps = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            i += 1
            continue
        start = i
        text = lines[i][2:]
        while goes_on(text) and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        i += 1
        output = []
        while i < len(lines) and not lines[i].startswith("$ "):
            output.append(lines[i])
            i += 1
        comment = text.split("#", 1)[1] if "#" in text else ""
        # "(columns cut)", "(counts vary)": the text says its output is not all there, or not the same.
        unchecked = re.search(r"\([^)]*\b(cut|vary)\b[^)]*\)", comment)
        steps.append(Step("command", at(first_line + start), text, output, checked=not unchecked))
    return steps


def document_paths(source):
    """README.md and every Markdown file under docs/, as paths relative to `source`."""
    root = Path(source)
    return [Path("README.md")] + sorted(p.relative_to(root) for p in (root / "docs").rglob("*.md"))


def parse_walkthroughs(source):
    """The walkthroughs of every document, in document order."""
    walkthroughs = []
    for path in document_paths(source):
        walkthroughs.extend(parse_document(Path(source) / path, str(path)))
    return walkthroughs


def parse_document(path, shown):
    """The walkthroughs of one document; `shown` is its name in messages ("README.md")."""

    def at(number):
        return f"{shown}:{number}"

    lines = Path(path).read_text().splitlines()
    walkthroughs = []
    current = None
    pending = None  # a marker's effect on the next code block: "skip", "write-files"
    befores = []    # (text, step): run step before the next block's command holding text
    last_sh_step = None
    i = 0
    while i < len(lines):
        line = lines[i]
        marker = kMarker.match(line)
        if marker:
            start = i
            body = marker.group(1)
            if not marker.group(2):  # spans lines, up to -->
                rest = []
                i += 1
                while i < len(lines) and not lines[i].rstrip().endswith("-->"):
                    rest.append(lines[i])
                    i += 1
                rest.append(lines[i].rstrip()[:-3])
                body = body + "\n" + "\n".join(rest)
            word, argument = (re.split(r"\s+", body.strip(), maxsplit=1) + [""])[:2]
            if word == "end":
                current = None
            elif word == "restart-host":
                current.steps.append(Step("restart-host", at(start + 1)))
            elif word == "unbind":
                current.steps.append(Step("unbind", at(start + 1), argument))
            elif word == "bind":
                literal, arrow, command = argument.partition("=")
                if not arrow:
                    raise SystemExit(f"{at(start + 1)}: bind VALUE = COMMAND")
                current.steps.append(Step("bind", at(start + 1), command.strip(), [literal.strip()]))
            elif word == "skip-outside":
                since, until, *reason = argument.split()
                if not reason:
                    raise SystemExit(f"{at(start + 1)}: skip-outside FROM TO REASON")
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                if not since <= now < until:
                    pending = "skip"
            elif word in ("skip", "write-files"):
                pending = word
                if word == "skip" and not argument.strip():
                    raise SystemExit(f"{at(start + 1)}: a skip marker needs a reason")
            elif word == "run":
                current.steps.append(Step("command", at(start + 1), argument.strip(), None))
            elif word == "before":
                text, arrow, command = argument.partition("=>")
                if not arrow:
                    raise SystemExit(f"{at(start + 1)}: before TEXT => COMMAND")
                befores.append((text.strip(), Step("command", at(start + 1), command.strip(), None)))
            else:
                current = Walkthrough(word, at(start + 1), argument.split())
                walkthroughs.append(current)
            last_sh_step = None
            i += 1
            continue
        fence = kFence.match(line)
        if not fence:
            if line.strip():
                last_sh_step = None if not line.startswith("<!--") else last_sh_step
            i += 1
            continue
        language = fence.group(1)
        body_start = i + 1
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        body = lines[body_start:i]
        i += 1
        if current is None:
            continue
        first_new = len(current.steps)
        if pending == "skip":
            pass
        elif pending == "write-files":
            current.steps.extend(write_file_steps(body, body_start + 1, at))
        elif language in ("sh", "bash"):
            for number, command in split_commands(body, body_start + 1):
                current.steps.append(Step("command", at(number), command, None))
        elif not language and any(l.startswith("$ ") for l in body):
            current.steps.extend(transcript_steps(body, body_start + 1, at))
        elif not language and last_sh_step is not None:
            last_sh_step.expected = body
        skipped = pending == "skip"
        pending = None
        new_steps = current.steps[first_new:]
        for text, step in [] if skipped else befores:
            target = next((t for t in new_steps if text in t.command), None)
            if target is None:
                raise SystemExit(f"{step.line}: no command of the next block holds '{text}'")
            current.steps.insert(current.steps.index(target), step)
        befores = []
        last_sh_step = new_steps[-1] if language in ("sh", "bash") and new_steps else None
    return walkthroughs


def write_file_steps(body, first_line, at):
    """Steps writing each `-- path` / `# path` headed part of a block to its path."""
    steps = []
    path, start, content = None, first_line, []

    def flush():
        if path:
            text = "\n".join(content).strip("\n") + "\n"
            steps.append(Step("command", at(start), f"mkdir -p \"$(dirname {path})\" && cat > {path} <<'TIDE_README_EOF'\n"
                              f"{text}TIDE_README_EOF", None))

    for offset, line in enumerate(body):
        header = re.match(r"^(?:--|#)\s+(\S+\.\w+)\s*$", line)
        if header:
            flush()
            path, start, content = header.group(1), first_line + offset, []
        else:
            content.append(line)
    flush()
    return steps


# --- comparing output ----------------------------------------------------------------------

kTime = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
kClock = re.compile(r"\b\d\d:\d\d:\d\d\b")
kDuration = re.compile(r"\b\d+(\.\d+)?(us|ms|s)\b")
kHostPort = re.compile(r"(-> |\": ?|127\.0\.0\.1:)\d{4,5}\b")
kSecret = re.compile(r"\b[0-9a-f]{64}\b")
kInstanceName = re.compile(r"\b([a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*)-([a-z0-9]{10})\b")
kWatchProgress = re.compile(r"^<TIME>\s+IN_PROGRESS\b")
# A share measured from live traffic ("error rate 20.0%"): the requests of a second vary.
kMeasuredShare = re.compile(r"\b(error rate) \d+(\.\d+)?%")
# A hash the text abbreviates ("3f2a..."): any hash.
kAbbreviatedHash = re.compile(r"\b[0-9a-f]{4,}\.\.\.")
# A watch line's ready counts: how far removal got when the line was drawn is timing.
kReadyCounts = re.compile(r"\bnew \d+/\d+ ready, old \d+/\d+ ready\b")


def normalise(line):
    line = kTime.sub("<TIME>", line)
    line = kClock.sub("<CLOCK>", line)
    line = kDuration.sub("<DUR>", line)
    line = kHostPort.sub(lambda m: m.group(1) + "<PORT>", line)
    line = kReadyCounts.sub("new <N> ready, old <N> ready", line)
    line = kMeasuredShare.sub(r"\1 <PCT>", line)
    line = re.sub(r"-{3,}", "---", line)
    return re.sub(r"\s+", " ", line).strip()


def is_variable_name(match):
    suffix = match.group(2)
    return any(c.isdigit() for c in suffix) and any(c.isalpha() for c in suffix)


def expected_pattern(line, bindings):
    """A regex for a normalised expected line: its drawn values bound or captured."""
    parts = []
    groups = []
    position = 0
    tokens = []
    for match in kSecret.finditer(line):
        tokens.append((match.start(), match.end(), match.group(0), r"[0-9a-f]{64}"))
    for match in kInstanceName.finditer(line):
        if is_variable_name(match):
            tokens.append((match.start(), match.end(), match.group(0), re.escape(match.group(1)) + r"-[a-z0-9]{10}"))
    tokens.sort()
    for start, end, literal, free in tokens:
        if start < position:
            continue
        parts.append(literal_pattern(line[position:start]))
        if literal in bindings:
            parts.append(re.escape(bindings[literal]))
        else:
            parts.append(f"({free})")
            groups.append(literal)
        position = end
    parts.append(literal_pattern(line[position:]))
    return re.compile("".join(parts)), groups


def literal_pattern(text):
    return ".*".join(re.escape(piece) for piece in text.split("..."))


def checked_lines(expected):
    lines = []
    for line in expected:
        n = normalise(kAbbreviatedHash.sub("...", line))
        if not n or n in ("...", "^C") or kWatchProgress.match(n):
            continue
        lines.append(n)
    return lines


def match_output(expected_lines, actual_text, bindings):
    """None when every expected line appears in order (bindings updated), else the first
    line that did not."""
    actual = [normalise(l) for l in actual_text.splitlines()]
    found = {}
    position = 0
    for line in expected_lines:
        pattern, groups = expected_pattern(line, {**bindings, **found})
        for index in range(position, len(actual)):
            hit = pattern.fullmatch(actual[index])
            if hit:
                for name, value in zip(groups, hit.groups()):
                    found[name] = value
                position = index + 1
                break
        else:
            return line
    bindings.update(found)
    return None


def substitute(command, bindings):
    for literal, value in bindings.items():
        command = command.replace(literal, value)
    return command


kMutating = re.compile(r"\b(create|add-deployment|approve|approve-operation|reject|reject-operation|operate|promote|"
                       r"abort|rollback|retry|pause|resume|update|delete|revoke|reload|cancel|cordon|uncordon|drain|"
                       r"export|cp|mv|rm|kill|sed -i|tee)\b|--data-binary|-X ?POST|=\$\(")


def read_only(command):
    return not kMutating.search(command)


# --- running -------------------------------------------------------------------------------

class Host:
    """`tide serve` in the scratch dir, on a free port, its workloads on a port block of their own."""

    def __init__(self, tide, scratch, config, ports):
        self.tide = tide
        self.scratch = scratch
        self.url = f"http://127.0.0.1:{free_port()}"
        self.data_dir = scratch / ".tide"
        self.config = config
        self.log = scratch.parent / "serve.log"
        self.ports = ports
        self.process = None
        self.token = ""

    def start(self):
        command = [self.tide, "serve", "--listen", self.url.removeprefix("http://"), "--data-dir", str(self.data_dir),
                   "--config", str(self.config)]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, cwd=self.scratch, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + kHostDeadlineSeconds
        while not self.healthy():
            if self.process.poll() is not None:
                raise AssertionError(f"tide serve exited with {self.process.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise AssertionError(f"tide serve did not answer /healthz; see {self.log}")
            time.sleep(0.1)
        self.token = (self.data_dir / "admin.token").read_text().strip()

    def healthy(self):
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=kHostDeadlineSeconds)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def read_output(path):
    return path.read_text(errors="replace") if path.exists() else ""


class Shell:
    """One bash for a walkthrough: each step runs in it, its output captured in a file."""

    def __init__(self, cwd, env):
        self.cwd = cwd
        self.process = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        self.count = 0
        self.last_code = 0

    def send(self, text):
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def reply(self, tag, deadline):
        """The line the shell prints for `tag` ("__tide_rc__ 1 0"), or None at the deadline."""
        buffered = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.5)
            if not ready:
                continue
            chunk = os.read(self.process.stdout.fileno(), 4096)
            if not chunk:
                return None
            buffered += chunk
            for line in buffered.decode(errors="replace").splitlines():
                if line.startswith(tag):
                    return line
        return None

    def run(self, command, deadline):
        """(exit code, output) of `command` run in this shell; exit code None at the deadline."""
        self.count += 1
        out = self.cwd.parent / f"step-{self.count}.out"
        tag = f"__tide_rc__ {self.count}"
        # `$?` is the previous command's, as in a terminal (`echo $?`).
        self.send(f"(exit {self.last_code}); {{\n{command}\n}} >{out} 2>&1 </dev/null\necho \"{tag} $?\"\n")
        line = self.reply(tag, deadline)
        output = read_output(out)
        if line is None:
            return None, output
        self.last_code = int(line.split()[2])
        return self.last_code, output

    def run_until_interrupted(self, command, expected, bindings, deadline):
        """Runs `command` in the background until `expected` has appeared, then sends SIGINT."""
        self.count += 1
        out = self.cwd.parent / f"step-{self.count}.out"
        tag = f"__tide_bg__ {self.count}"
        self.send(f"{{\n{command}\n}} >{out} 2>&1 </dev/null &\necho \"{tag} $!\"\n")
        line = self.reply(tag, deadline)
        if line is None:
            return "did not start", ""
        pid = int(line.split()[2])
        missing = "no output yet"
        while time.monotonic() < deadline:
            missing = match_output(expected, read_output(out), bindings)
            if missing is None:
                break
            time.sleep(0.2)
        # Its own process and the tide it runs (a subshell): both get the ^C.
        subprocess.run(["pkill", "-INT", "-P", str(pid)], check=False)
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:
            pass
        return missing, read_output(out)

    def close(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:
            pass
        self.process.wait()


class Failure(Exception):
    pass


def run_walkthrough(walkthrough, tide, source, keep):
    """True when the walkthrough passed, False when it failed, None when it was skipped."""
    for option in walkthrough.options:
        for program in option.removeprefix("needs=").split(",") if option.startswith("needs=") else []:
            if shutil.which(program) is None:
                print(f"walkthrough {walkthrough.name} ({walkthrough.line}): skipped: {program} is not installed "
                      "(.ci/install-deps installs it)")
                return None
    work = Path(tempfile.mkdtemp(prefix=f"tide-readme-{walkthrough.name}-"))
    scratch = work / "repo"
    scratch.mkdir()
    for directory in ("examples", "policies", "scripts"):
        shutil.copytree(Path(source) / directory, scratch / directory)
    if "all-policies" not in walkthrough.options:
        (scratch / "policies" / "change_freeze.lua").unlink()
    fixed_ports = [o.removeprefix("port-block=") for o in walkthrough.options if o.startswith("port-block=")]
    # The fixed block first: port_block() passes over a block this process holds, whereas
    # port_block_at() would wait forever for a block port_block() had just taken.
    fixed_lock = port_block_at(int(fixed_ports[0])) if fixed_ports else None
    port_lock, first, last = port_block(60)
    config = work / "harness.yaml"
    extra = ""
    for option in walkthrough.options:
        if option.startswith("config="):
            extra = (scratch / option.removeprefix("config=")).read_text()
    config.write_text(extra + f"\nprocess: {{port_range_start: {first}, port_range_end: {last}}}\n")
    for option in walkthrough.options:
        for port in option.removeprefix("free-ports=").split(",") if option.startswith("free-ports=") else []:
            if not port_is_free(int(port)):
                print(f"walkthrough {walkthrough.name} ({walkthrough.line}): FAILED\n"
                      f"port {port} is in use; the walkthrough's commands would talk to whatever listens there",
                      file=sys.stderr)
                port_lock.close()
                if fixed_lock:
                    fixed_lock.close()
                return False
    host = None if "no-host" in walkthrough.options else Host(tide, scratch, config, (first, last))
    env = dict(os.environ)
    env["PATH"] = f"{Path(tide).parent}:{env['PATH']}"
    # ~/tide is the reader's clone, for the walkthroughs that keep their policies elsewhere.
    env["HOME"] = str(work)
    (work / "tide").symlink_to(Path(source).resolve())
    shell = None
    failed = True
    started = time.monotonic()
    try:
        if host:
            host.start()
            env["TIDE_SERVER"] = host.url
            env["TIDE_TOKEN"] = host.token
        shell = Shell(scratch, env)
        bindings = {}
        for step in walkthrough.steps:
            run_step(step, shell, host, bindings)
        failed = False
        print(f"walkthrough {walkthrough.name}: OK ({len(walkthrough.steps)} steps, "
              f"{time.monotonic() - started:.0f} s)")
        return True
    except Failure as failure:
        print(f"walkthrough {walkthrough.name} ({walkthrough.line}): FAILED\n{failure}\n"
              f"scratch dir and host log kept in {work}", file=sys.stderr)
        return False
    finally:
        if shell:
            shell.close()
        if host:
            host.stop()
        kill_workloads_of(work)
        port_lock.close()
        if fixed_lock:
            fixed_lock.close()
        if not failed and not keep:
            shutil.rmtree(work, ignore_errors=True)


def run_step(step, shell, host, bindings):
    if step.kind == "restart-host":
        host.stop()
        host.start()
        return
    if step.kind == "unbind":
        for literal in step.command.split():
            bindings.pop(literal, None)
        return
    if step.kind == "bind":
        code, output = shell.run(substitute(step.command, bindings), time.monotonic() + kStepDeadlineSeconds)
        if code != 0 or not output.strip():
            raise Failure(describe(step, step.command, code, output, "printed no value to bind"))
        bindings[step.expected[0]] = output.strip()
        return
    command = substitute(step.command, bindings)
    deadline = time.monotonic() + kStepDeadlineSeconds
    expected = checked_lines(step.expected) if step.expected is not None and step.checked else []
    interrupted = step.expected is not None and any(l.strip() == "^C" for l in step.expected)
    if interrupted:
        missing, output = shell.run_until_interrupted(command, expected, bindings, deadline)
        if missing is not None:
            raise Failure(describe(step, command, None, output, f"never printed: {missing}"))
        return
    wants_error = step.expected is not None and any(l.startswith("error:") for l in step.expected)
    look_again_until = time.monotonic() + kLookAgainSeconds
    while True:
        code, output = shell.run(command, deadline)
        if code is None:
            raise Failure(describe(step, command, code, output, f"still running after {kStepDeadlineSeconds} s"))
        problem = None
        if wants_error and code == 0:
            problem = "exited 0, but the text shows an error"
        elif not wants_error and code != 0:
            problem = f"exited {code}"
        else:
            missing = match_output(expected, output, bindings)
            if missing is not None:
                problem = f"did not print: {missing}"
        if problem is None:
            return
        if not read_only(command) or time.monotonic() > look_again_until:
            raise Failure(describe(step, command, code, output, problem))
        time.sleep(0.5)


def describe(step, command, code, output, problem):
    return (f"{step.line}: {problem}\n  command: {command}\n  exit code: {code}\n"
            f"  output:\n" + "\n".join("    " + l for l in output.splitlines()[-40:]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tide", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--list", action="store_true", help="print the walkthroughs' names and steps")
    parser.add_argument("--registered", nargs="*", help="fail unless exactly these walkthroughs are marked")
    parser.add_argument("--keep", action="store_true", help="keep the scratch dirs of passing walkthroughs")
    args = parser.parse_args()
    tide = str(Path(args.tide).resolve())
    walkthroughs = parse_walkthroughs(args.source)
    names = [w.name for w in walkthroughs]
    if len(set(names)) != len(names):
        repeated = sorted({f"{w.name} ({w.line})" for w in walkthroughs if names.count(w.name) > 1})
        print(f"walkthrough names repeat: {repeated}", file=sys.stderr)
        return 1
    if args.registered is not None:
        if sorted(args.registered) != sorted(names):
            print(f"README.md and docs/ mark the walkthroughs {sorted(names)}; CMakeLists.txt registers "
                  f"{sorted(args.registered)}", file=sys.stderr)
            return 1
        print(f"{len(names)} walkthroughs, each registered")
        return 0
    if args.list:
        for w in walkthroughs:
            print(f"{w.name} ({w.line}) {' '.join(w.options)}")
            for s in w.steps:
                shown = s.command.splitlines()[0] if s.command else ""
                print(f"  {s.line}: {s.kind} {shown}  [{0 if s.expected is None else len(s.expected)} lines]")
        return 0
    unknown = set(args.only) - set(names)
    if unknown:
        print(f"no walkthrough named {sorted(unknown)} in README.md or docs/ (there are {names})", file=sys.stderr)
        return 1
    results = [run_walkthrough(w, tide, args.source, args.keep) for w in walkthroughs
               if not args.only or w.name in args.only]
    if any(result is False for result in results):
        return 1
    return kSkipped if results and all(result is None for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
