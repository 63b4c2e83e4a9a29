"""A private RabbitMQ node for tests that restart the broker: the shared one on 5672 is never touched.

The node gets its own name (``cpfault-<uuid8>@localhost``), AMQP and distribution ports, data and log
folders, an empty plugin list and its own (empty) ``rabbitmq-env.conf`` and ``rabbitmq.conf``, so nothing
of ``/etc/rabbitmq`` (which configures the shared node) applies. Every ``rabbitmqctl`` call names it
with ``-n``. The server runs as a child process of the test in its own session and is stopped with it.

Its ports are chosen before it starts (a restarted node keeps them, its clients reconnect to them), so
it cannot bind port 0: AMQP counts as up only from this node's own process, and when another process
holds one of its ports at the first start, the node starts again on other ports (``tests.support.ports``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pika
import pika.exceptions
from tests.support.ports import Holder, free_ports, port_holder

START_ATTEMPTS = 3  # a first start on other ports, each time another process held one of the node's


class NodeUnavailable(RuntimeError):
    """The private node could not be started here (the test is skipped with this reason)."""


def _scripts() -> Path:
    """The folder of the real ``rabbitmq-server`` and ``rabbitmqctl`` scripts (not the su wrapper)."""
    found = shutil.which("rabbitmq-server") or shutil.which("rabbitmq-server", path="/usr/sbin:/usr/lib/rabbitmq/bin")
    if found is None:
        raise NodeUnavailable("rabbitmq-server is not installed (not on PATH nor in /usr/sbin)")
    folder = Path(found).resolve().parent  # /usr/sbin/rabbitmq-server -> /usr/lib/rabbitmq/bin/<wrapper>
    if not (folder / "rabbitmq-server").exists() or not (folder / "rabbitmqctl").exists():
        raise NodeUnavailable(f"no rabbitmq-server and rabbitmqctl scripts next to {Path(found).resolve()}")
    return folder


def _raise_open_files(wanted: int) -> None:
    """In the node's process before exec: ``ulimit -n wanted`` (as far as the hard limit allows, unless root)."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, max(wanted, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


class PrivateNode:
    def __init__(self, workdir: Path) -> None:
        self.scripts = _scripts()
        self.name = f"cpfault-{uuid.uuid4().hex[:8]}@localhost"
        self.port, self.dist_port, self.management_port = free_ports(3)
        self.workdir = workdir
        self.log = workdir / "server.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._started = False  # once up, a start again keeps the ports its clients know

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def _environment(self) -> dict[str, str]:
        folder = self.workdir
        return os.environ | {
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_MNESIA_BASE": str(folder / "mnesia"),
            "RABBITMQ_LOG_BASE": str(folder / "log"),
            "RABBITMQ_PID_FILE": str(folder / "node.pid"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(folder / "enabled_plugins"),
            "RABBITMQ_CONF_ENV_FILE": str(folder / "rabbitmq-env.conf"),
            "RABBITMQ_CONFIG_FILE": str(folder / "rabbitmq.conf"),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(folder / "advanced.config"),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "ERL_CRASH_DUMP": str(folder / "erl_crash.dump"),  # a node that cannot boot leaves it here, not in the cwd
        }

    @property
    def management_url(self) -> str:
        """Its management API, when started with ``management=True`` (a port of its own, never 15672)."""
        return f"http://127.0.0.1:{self.management_port}"

    def start(
        self, timeout: float = 90.0, plugins: tuple[str, ...] = (), nofile: int | None = None, management: bool = False
    ) -> None:
        """Start the node with ``plugins`` enabled (none by default) and, when given, ``nofile`` open files
        (``ulimit -n``): an estate of thousands of queues needs more than a default node's 1,024. ``management``:
        also its management API, on ``management_url``. Starting it again after ``stop`` keeps its data and ports."""
        for _attempt in range(1 if self._started else START_ATTEMPTS):
            self._launch(plugins, nofile, management)
            if self.wait_until_up(timeout):
                self._started = True
                return
            taken = [port for port in self._ports(management) if port_holder(port, self._sessions()) is Holder.ANOTHER]
            tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else "(no log)"
            self.stop()
            if not taken:
                break
            with self.log.open("a") as log:
                log.write(f"\n--- ports {taken} are another process's: starting again on other ports\n")
            self.port, self.dist_port, self.management_port = free_ports(3)
        raise NodeUnavailable(f"private node {self.name} did not accept AMQP on {self.port} in {timeout:.0f} s: {tail}")

    def _ports(self, management: bool) -> list[int]:
        return [self.port, self.dist_port, *([self.management_port] if management else [])]

    def _sessions(self) -> list[int]:
        return [self._process.pid] if self._process is not None else []

    def _launch(self, plugins: tuple[str, ...], nofile: int | None, management: bool) -> None:
        folder = self.workdir
        for sub in ("mnesia", "log"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        if management:
            plugins = (*plugins, "rabbitmq_management")
        (folder / "enabled_plugins").write_text(f"[{','.join(plugins)}].\n")
        (folder / "rabbitmq-env.conf").write_text("# private test node: nothing from /etc/rabbitmq\n")
        config = f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
        if management:
            config += f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {self.management_port}\n"
        (folder / "rabbitmq.conf").write_text(config)
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.scripts / "rabbitmq-server")],
                env=self._environment(),
                cwd=folder,  # a crashing node writes its MnesiaCore dump in its working folder, not the checkout
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=(lambda: _raise_open_files(nofile)) if nofile else None,
            )

    def ctl(self, *command: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """``rabbitmqctl -n <this node> ...`` (never another node)."""
        return subprocess.run(
            [str(self.scripts / "rabbitmqctl"), "-n", self.name, *command],
            env=self._environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )

    def restart_app(self, timeout: float = 60.0) -> None:
        """Stop and start the RabbitMQ application (clients lose their connections), then wait for AMQP."""
        self.ctl("stop_app")
        self.ctl("start_app")
        if not self.wait_until_up(timeout):
            raise RuntimeError(f"{self.name} did not come back within {timeout:.0f} s")

    def wait_until_up(self, timeout: float) -> bool:
        """This node accepts AMQP on its port (False when it exits, or another process listens there)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                return False
            holder = port_holder(self.port, self._sessions())
            if holder is Holder.ANOTHER:
                return False
            try:
                if holder is Holder.OURS:
                    parameters = pika.URLParameters(self.url + "?connection_attempts=1&socket_timeout=2")
                    pika.BlockingConnection(parameters).close()
                    return True
            except (pika.exceptions.AMQPError, OSError):
                pass
            time.sleep(0.5)
        return False

    def stop(self) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.ctl("stop", timeout=60)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # our own session: the server and its children only
            process.wait(timeout=30)
