#!/usr/bin/env bash
# The Java binding (bindings/java, docs/languages.md): the JUnit 4 tests
# against this build (the MLP against a float64 reference, float[] and
# direct buffers, LoomException, a function written in Java, eight
# threads, reference counts) and the example.  Usage: run_java_test.sh
# LOOMC SOURCE_DIR BUILD_DIR (exit 77, a skip, when the binding was not
# built or JUnit 4 is missing: scripts/setup.sh installs
# default-jdk-headless and junit4).
set -euo pipefail
loomc=$1
src=$2
build=$3
jar="$build/java/loom.jar"
jni="$build/lib/libloom_jni.so"
junit=/usr/share/java/junit4.jar
hamcrest=/usr/share/java/hamcrest-core.jar
for f in "$jar" "$jni" "$junit" "$hamcrest"; do
  if [ ! -f "$f" ]; then
    echo "no $f (a JDK and junit4: scripts/setup.sh installs them): the Java binding is not tested" >&2
    exit 77
  fi
done
java -version 2>&1 | head -1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
javac --release 11 -Xlint:all -Werror -d "$tmp/test" -cp "$jar:$junit" "$src/bindings/java/src/test/java/org/loom/LoomTest.java"
java -Dorg.loom.library="$jni" -Dloom.root="$src" -Dloomc="$loomc" -cp "$jar:$tmp/test:$junit:$hamcrest" \
  org.junit.runner.JUnitCore org.loom.LoomTest
"$loomc" build "$src/examples/mlp.loom" --config "$src/configs/host.yaml" -o "$tmp/mlp.so"
out=$(java -Dorg.loom.library="$jni" -cp "$jar" "$src/bindings/java/example/RunMlp.java" "$tmp/mlp.so")
echo "$out"
grep -q "^output: float32 \[64, 10\]$" <<< "$out"
echo "java: all checks passed"
