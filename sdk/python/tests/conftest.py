"""A live stack on loopback for the SDK tests: a fresh sha2-128f group, its registry, a
gateway pinned to the group key, and two members (alice, bob) with signatures, made with
the repository's binaries as scripts/lib.sh `start_stack` and docs/walkthrough.md do.

The binaries are looked for in $DGSP_BIN_DIR, $CARGO_TARGET_DIR/debug,
~/.cache/dgsp/target/debug and target/debug (build them with
`cargo test --workspace --locked --no-run`). Without them the live tests are skipped, with
a message saying so; the vector tests run regardless.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[3]
BINARIES = ("dgsp-registry", "dgsp-gateway", "dgsp-manager")
MESSAGE = b"a report signed by a member of the group, checked from Python"


def find_bin_dir() -> Optional[Path]:
    """The first directory holding all three binaries, or None."""
    candidates: List[Path] = []
    if os.environ.get("DGSP_BIN_DIR"):
        candidates.append(Path(os.environ["DGSP_BIN_DIR"]))
    if os.environ.get("CARGO_TARGET_DIR"):
        candidates.append(Path(os.environ["CARGO_TARGET_DIR"]) / "debug")
    candidates += [Path.home() / ".cache/dgsp/target/debug", REPO / "target/debug"]
    for d in candidates:
        if all(os.access(d / b, os.X_OK) for b in BINARIES):
            return d
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def secret_file(path: Path) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(24).replace("-", "").replace("_", "") + "\n")
    return path


def wait_ready(url: str, proc: "subprocess.Popen[bytes]", name: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the {name} exited ({proc.returncode}); see {log}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the {name} did not become ready in 60 s; see {log}")


@dataclass
class Stack:
    """The running stack and what the fixture made with it."""

    bin: Path
    state: Path
    registry_url: str
    gateway_url: str
    group_key: bytes  # group.pub, as `dgsp-registry public-key` prints it
    other_group_key: bytes  # another group's key (never served)
    env: Dict[str, str]
    message: bytes = MESSAGE
    signatures: Dict[str, bytes] = field(default_factory=dict)  # base64 signature files
    procs: "List[subprocess.Popen[bytes]]" = field(default_factory=list)

    def manager(self, *args: str, wallet: Optional[str] = None) -> str:
        """Runs dgsp-manager (as the operator, or as `wallet`'s member) and returns stdout."""
        env = dict(self.env)
        if wallet:
            env["DGSP_WALLET"] = str(self.state / f"{wallet}.wallet")
            env["DGSP_WALLET_PASSPHRASE_FILE"] = str(self.state / f"{wallet}-passphrase")
        r = subprocess.run(
            [str(self.bin / "dgsp-manager"), *args],
            cwd=self.state, env=env, capture_output=True, timeout=120,
        )
        if r.returncode != 0:
            raise RuntimeError(
                f"dgsp-manager {' '.join(args)} exited {r.returncode}:\n{r.stderr.decode()[-2000:]}"
            )
        return r.stdout.decode()

    def open(self, who: str) -> Dict[str, object]:
        """The operator's opening of `who`'s signature (`operator open --json`)."""
        out = self.manager("operator", "open", "--json", "--message", "msg.txt", "--signature", f"{who}.sig")
        return json.loads(out)  # type: ignore[no-any-return]

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """A fresh group served on loopback, alice and bob each holding one signature on
    MESSAGE; torn down (SIGTERM, then the directory removed) at the end of the session."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "live-stack tests skipped: dgsp-registry, dgsp-gateway and dgsp-manager not found "
            "(set DGSP_BIN_DIR, or build them with `cargo test --workspace --locked --no-run`)"
        )
    state = Path(tempfile.mkdtemp(prefix="dgsp-python-sdk-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DGSP_")}
    reg, gw = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    env.update(
        DGSP_KEY_PASSPHRASE_FILE=str(secret_file(state / "passphrase")),
        DGSP_ADMIN_TOKEN_FILE=str(secret_file(state / "admin-token")),
        DGSP_REGISTRY_URL=f"http://{reg}",
        DGSP_GATEWAY_URL=f"http://{gw}",
        XDG_CONFIG_HOME=str(state / "config"),  # no user config file is read
        RUST_LOG=env.get("RUST_LOG", "warn"),
    )
    def run(*a: str) -> bytes:
        return subprocess.run(
            [str(bin_dir / a[0]), *a[1:]], cwd=state, env=env, check=True, capture_output=True, timeout=120
        ).stdout

    run("dgsp-registry", "init", "--params", "sha2-128f", "--data", str(state / "group"))
    group_key = run("dgsp-registry", "public-key", "--data", str(state / "group"))
    (state / "group.pub").write_bytes(group_key)
    other_env = dict(env, DGSP_KEY_PASSPHRASE_FILE=str(secret_file(state / "other-passphrase")))
    subprocess.run(
        [str(bin_dir / "dgsp-registry"), "init", "--params", "sha2-128f", "--data", str(state / "other")],
        env=other_env, check=True, capture_output=True, timeout=120,
    )
    other_key = subprocess.run(
        [str(bin_dir / "dgsp-registry"), "public-key", "--data", str(state / "other")],
        env=other_env, check=True, capture_output=True, timeout=120,
    ).stdout

    s = Stack(bin_dir, state, f"http://{reg}", f"http://{gw}", group_key, other_key, env)
    try:
        log = state / "registry.log"
        s.procs.append(subprocess.Popen(
            [str(bin_dir / "dgsp-registry"), "serve", "--data", str(state / "group"), "--listen", reg],
            env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        ))
        wait_ready(s.registry_url, s.procs[-1], "registry", log)
        log = state / "gateway.log"
        s.procs.append(subprocess.Popen(
            [str(bin_dir / "dgsp-gateway"), "serve", "--registry", s.registry_url,
             "--group-key", str(state / "group.pub"), "--data", str(state / "gateway"), "--listen", gw],
            env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        ))
        wait_ready(s.gateway_url, s.procs[-1], "gateway", log)

        s.manager("operator", "join", "alice", "bob", "--out", "joins")
        (state / "msg.txt").write_bytes(MESSAGE)
        for who in ("alice", "bob"):
            secret_file(state / f"{who}-passphrase")
            s.manager("member", "keygen", "--join", f"joins/{who}.join.json", wallet=who)
            s.manager("member", "csr", "--count", "2", "--out", f"{who}.csr.json", wallet=who)
            s.manager("operator", "issue", f"{who}.csr.json", "--out", f"{who}.certs.json")
            s.manager("member", "import", f"{who}.certs.json", wallet=who)
            s.manager("member", "sign", "msg.txt", "--out", f"{who}.sig", wallet=who)
            s.signatures[who] = (state / f"{who}.sig").read_bytes()
        yield s
    finally:
        s.stop()
        if os.environ.get("DGSP_KEEP_STATE"):
            print(f"stack state kept in {state}")
        else:
            shutil.rmtree(state, ignore_errors=True)
