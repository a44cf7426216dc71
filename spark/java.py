"""Check that a Java runtime Spark can use (17 or newer) is present.

`python -m replog.spark.java` exits 1 with a message naming what is missing.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

MIN_JAVA = 17


def java_problem() -> str | None:
    """None when Java >= 17 is usable, else a sentence saying what is missing."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return (f"Spark needs Java {MIN_JAVA}+ and no `java` was found "
                "(install e.g. Debian's openjdk-17-jre-headless, or set JAVA_HOME)")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"Spark needs Java {MIN_JAVA}+ and `{java} -version` failed: {e}"
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return f"could not read the Java version from `{java} -version`"
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    if major < MIN_JAVA:
        return f"Spark needs Java {MIN_JAVA}+, found Java {major} at {java}"
    return None


def main() -> int:
    problem = java_problem()
    if problem:
        print(f"replog: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
