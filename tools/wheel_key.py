"""Print the folder name for a llama-cpp-python wheel built on this machine with these flags.

A native build runs only on CPUs with the instructions it was compiled for, so the name
covers the Python, the machine, its CPU's features and the build flags (LLAMA_CMAKE_ARGS).
"""

import hashlib
import os
import platform
import sys


def cpu_features() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor()


key = "\n".join(
    [sys.version, platform.machine(), cpu_features(), os.environ.get("LLAMA_CMAKE_ARGS", "")]
)
print(
    f"{platform.machine()}-py{sys.version_info[0]}{sys.version_info[1]}-"
    f"{hashlib.sha256(key.encode()).hexdigest()[:12]}"
)
