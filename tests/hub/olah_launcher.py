"""Start olah (a third-party Hub mirror from PyPI) on 127.0.0.1 with an ephemeral port, for the mirror test.

Usage: python olah_launcher.py CONFIG.toml LOG_DIR PORT_FILE. olah reads its config from ``$OLAH_CONFIG`` when its
server module is imported; the socket is bound here (port 0) and handed to uvicorn, and its port is written to
PORT_FILE once the URLs that olah generates point at it.
"""

import os
import socket
import sys
from pathlib import Path

config_path, log_dir, port_file = sys.argv[1:4]
os.environ["OLAH_CONFIG"] = config_path
os.environ["OLAH_LOG_PATH"] = log_dir

import uvicorn  # noqa: E402
from olah.server import app  # noqa: E402

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
settings = app.state.app_settings.config
settings.mirror_netloc = settings.mirror_lfs_netloc = f"127.0.0.1:{port}"
Path(port_file).write_text(str(port))
uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])
