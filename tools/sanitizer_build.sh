#!/bin/sh
# Build aucopt's Cython kernels with AddressSanitizer and UndefinedBehaviorSanitizer
# in a copy of this tree (the tree's own .so files are left alone), then print how
# to run the fuzzer (tools/fuzz.py) against that build.
#
#   tools/sanitizer_build.sh [DEST]        (default DEST: /tmp/aucopt-asan)
#
# Needs gcc with libasan / libubsan. The copy holds the working tree as it is,
# uncommitted changes included; run the script again after changing a kernel.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-/tmp/aucopt-asan}
SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer"

LIBASAN=$(gcc -print-file-name=libasan.so)
if [ ! -e "$LIBASAN" ]; then
    echo "gcc has no libasan.so (got '$LIBASAN'); install the compiler's sanitizer runtime" >&2
    exit 1
fi

echo "copying $SRC -> $DEST"
rm -rf "$DEST"
mkdir -p "$DEST"
tar -C "$SRC" -cf - --exclude=.git --exclude=build --exclude='*.so' --exclude=tools/out \
    --exclude=.hypothesis --exclude=__pycache__ --exclude='aucopt/_kernels/*.c' . \
    | tar -C "$DEST" -xf -

echo "building the kernels with $SANITIZE (log: $DEST/sanitizer-build.log)"
(cd "$DEST" && CFLAGS="$SANITIZE -g" LDFLAGS="$SANITIZE" \
    python setup.py build_ext --inplace -j 2 > sanitizer-build.log 2>&1) || {
    tail -20 "$DEST/sanitizer-build.log" >&2
    exit 1
}
for so in "$DEST"/aucopt/_kernels/*.so; do
    if ! ldd "$so" | grep -q libasan; then
        echo "$so is not linked against libasan: the sanitizer flags were not used" >&2
        exit 1
    fi
done

cat <<EOF

Sanitized build ready in $DEST. Run the fuzzer against it (the interpreter itself is
not instrumented, so libasan is preloaded; crashes are saved to $SRC/tools/out):

  PYTHONPATH=$DEST LD_PRELOAD=$LIBASAN \\
  ASAN_OPTIONS=detect_leaks=0 \\
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \\
  python $DEST/tools/fuzz.py svmlight --seconds 300 --out $SRC/tools/out

The same environment runs any script or test against the build, from $DEST:
  cd $DEST && LD_PRELOAD=... ASAN_OPTIONS=... UBSAN_OPTIONS=... \\
  python -m pytest -q -p no:cacheprovider tests/test_svmlight_robust.py
EOF
