#!/usr/bin/env bash
# tests/package/test_packages.sh: builds the Debian packages with
# scripts/package, checks their metadata and contents, unpacks them into a
# scratch root (dpkg-deb -x: the system and dpkg's database are never
# touched), builds a consumer against the unpacked files with pkg-config and
# with find_package(rlock), runs it and the packaged rlock tool against a
# redis-server on a free loopback port, and removes the root again.
#
#   test_packages.sh SOURCE_DIR [C_COMPILER]
#
# Exits 0 when every check passes, 1 when one fails, 77 (CTest "skipped")
# when dpkg-deb, dpkg-shlibdeps, file, readelf or redis-server is missing,
# unless RLOCK_TEST_REQUIRE_REDIS=1 makes that a failure.
set -euo pipefail

src=$(cd "${1:?source dir}" && pwd)
cc=${2:-cc}
here="$src/tests/package"
start=$SECONDS

for tool in dpkg-deb dpkg-shlibdeps file readelf redis-server redis-cli; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        if [ "${RLOCK_TEST_REQUIRE_REDIS:-0}" = 1 ]; then
            echo "test_packages: $tool not found" >&2
            exit 1
        fi
        echo "test_packages: $tool not found; skipping" >&2
        exit 77
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rlock-packages.XXXXXX")
redis_pid=
cleanup() {
    if [ -n "$redis_pid" ]; then
        kill -TERM "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

checks=0
failures=0
ok() {
    checks=$((checks + 1))
    echo "ok - $1"
}
# not_ok DESCRIPTION [LINE...]: a failed check, with lines that say why.
not_ok() {
    checks=$((checks + 1))
    failures=$((failures + 1))
    echo "not ok - $1"
    shift
    local line
    for line in "$@"; do
        echo "#   $line"
    done
}
# check DESCRIPTION CMD...: ok when CMD succeeds; else its output.
check() {
    local what=$1 out
    shift
    if out=$("$@" 2>&1); then
        ok "$what"
    else
        not_ok "$what" "${out:-(exit status only)}"
    fi
}
# quiet LOG CMD...: runs CMD with its output in LOG, printed if it fails.
quiet() {
    local log=$1
    shift
    "$@" >"$log" 2>&1 || { cat "$log"; return 1; }
}

arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
    "$cc" -print-multiarch)
libdir="usr/lib/$multiarch"
dpkg_before=$(dpkg-query -W -f '${Package} ${Status}\n' 2>/dev/null | sort)

# ---- build --------------------------------------------------------------
echo "# scripts/package"
CC="$cc" quiet "$work/package.log" "$src/scripts/package" \
    --build-dir "$work/build" --out "$work/debs"

# deb_of NAME-REGEX: the package file whose Package field matches.
deb_of() {
    local deb
    for deb in "$work"/debs/*.deb; do
        if dpkg-deb -f "$deb" Package | grep -Eqx "$1"; then
            echo "$deb"
            return 0
        fi
    done
    return 1
}
# files_of DEB: its files and symlinks (no directories), without "./".
files_of() {
    dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./||' | sort
}
# owners_of FILE: the packages that hold the libraries FILE is linked to
# (dpkg -S of the path ldd gives, else of the same name under the
# directory's real path, for a merged /usr); "unowned:LIB" for a library
# that no package holds.
owners_of() {
    local lib owner
    for lib in $(ldd "$1" | awk '/=> \// { print $3 }'); do
        owner=$(dpkg -S "$lib" 2>/dev/null ||
            dpkg -S "$(readlink -f "$(dirname "$lib")")/$(basename "$lib")" \
                2>/dev/null) || owner="unowned:$lib"
        # "libc6:amd64: /path" -> libc6
        echo "$owner" | sed -n '1s/^\(unowned:.*\|[^:,]*\).*/\1/p'
    done | sort -u
}
# depends_has DEB PACKAGE...: every PACKAGE is named in DEB's Depends.
depends_has() {
    local deb=$1 dep missing=()
    shift
    local depends
    depends=", $(dpkg-deb -f "$deb" Depends), "
    for dep in "$@"; do
        case "$depends" in
        *", $dep, "* | *", $dep ("*) ;;
        *) missing+=("$dep") ;;
        esac
    done
    [ ${#missing[@]} -eq 0 ] ||
        { echo "Depends: ${depends:2:-2}; missing ${missing[*]}"; return 1; }
}

# ---- metadata -------------------------------------------------------------
runtime_deb=$(deb_of 'librlock[0-9]+') || true
dev_deb=$(deb_of 'librlock-dev') || true
tool_deb=$(deb_of 'rlock') || true
if [ -z "$runtime_deb" ] || [ -z "$dev_deb" ] || [ -z "$tool_deb" ]; then
    not_ok "three packages: librlockN, librlock-dev, rlock" \
        "built: $(cd "$work/debs" && echo *.deb)"
    echo "1..$checks"
    exit 1
fi
ok "three packages: $(basename "$runtime_deb") $(basename "$dev_deb") $(basename "$tool_deb")"
for deb in "$runtime_deb" "$dev_deb" "$tool_deb"; do
    pkg=$(dpkg-deb -f "$deb" Package)
    mkdir -p "$work/x/$pkg"
    dpkg-deb -x "$deb" "$work/x/$pkg"
    echo "# $pkg $(dpkg-deb -f "$deb" Version): Depends: $(dpkg-deb -f "$deb" Depends)"
done
runtime=$(dpkg-deb -f "$runtime_deb" Package)
version=$(dpkg-deb -f "$runtime_deb" Version)
check "one version and architecture ($version, $arch)" test \
    "$(for d in "$runtime_deb" "$dev_deb" "$tool_deb"; do
        dpkg-deb -f "$d" Version Architecture; done | sort -u | tr '\n' ' ')" \
    = "Architecture: $arch Version: $version "

# librlockN: named after the SONAME, holding only librlock.so.N*.
real=$(find "$work/x/$runtime/$libdir" -maxdepth 1 -type f -name 'librlock.so.*')
soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
check "runtime package $runtime is named after SONAME $soname" \
    test "$runtime" = "librlock${soname#librlock.so.}"
stray=$(files_of "$runtime_deb" | grep -v "^$libdir/${soname//./\\.}" || true)
check "$runtime holds only $libdir/$soname*" test -z "$stray"
check "$runtime has the $soname link and the library" test \
    -L "$work/x/$runtime/$libdir/$soname" -a -n "$real"
# shellcheck disable=SC2046 # package names are words
check "$runtime depends on the packages of what it links" \
    depends_has "$runtime_deb" $(owners_of "$real")
check "$runtime ships a shlibs file for $soname" sh -c \
    "dpkg-deb -I '$runtime_deb' shlibs | grep -q '^librlock ${soname#librlock.so.} $runtime '"

# librlock-dev: header, link, pkg-config and CMake files.
dev=$work/x/librlock-dev
for f in usr/include/rlock.h "$libdir/pkgconfig/rlock.pc" \
    "$libdir/cmake/rlock/rlockConfig.cmake" \
    "$libdir/cmake/rlock/rlockConfigVersion.cmake" \
    "$libdir/cmake/rlock/rlockTargets.cmake"; do
    check "librlock-dev has $f" test -f "$dev/$f"
done
check "librlock-dev has the librlock.so link to $soname" \
    test "$(readlink "$dev/$libdir/librlock.so")" = "$soname"
check "librlock-dev holds no librlock.so.N" \
    test -z "$(files_of "$dev_deb" | grep 'librlock\.so\.' || true)"
# The -dev packages whose .pc files rlock.pc's Requires name.
pc_owners=()
for mod in $(sed -n 's/^Requires\(\.private\)\{0,1\}: *//p' \
    "$dev/$libdir/pkgconfig/rlock.pc" | tr ',' ' '); do
    pc_owners+=("$(dpkg -S "$(pkg-config --path "$mod")" | sed 's/:.*//')")
done
check "librlock-dev depends on $runtime (= $version) and ${pc_owners[*]}" \
    depends_has "$dev_deb" "$runtime (= $version)" "${pc_owners[@]}"

# rlock: the tool.
check "rlock has usr/bin/rlock" test -x "$work/x/rlock/usr/bin/rlock"
tool_needs=$(owners_of "$work/x/rlock/usr/bin/rlock")
if readelf -d "$work/x/rlock/usr/bin/rlock" | grep -q "\[$soname\]"; then
    tool_needs+=" $runtime"
fi
# shellcheck disable=SC2086 # package names are words
check "rlock depends on the packages of what it links" \
    depends_has "$tool_deb" $tool_needs

# Man pages go with what they document; every installed file is packaged.
check "man3 pages only in librlock-dev, man1 only in rlock" test -z "$(
    files_of "$runtime_deb" | grep '^usr/share/man/' || true
    files_of "$dev_deb" | grep '^usr/share/man/man[^3]' || true
    files_of "$tool_deb" | grep '^usr/share/man/man[^1]' || true)"
DESTDIR="$work/all" quiet "$work/install.log" cmake --install "$work/build"
(cd "$work/all" && find . ! -type d | sed 's|^\./||' | sort) >"$work/all.list"
for deb in "$runtime_deb" "$dev_deb" "$tool_deb"; do
    files_of "$deb"
done | sort >"$work/packaged.list"
check "every installed file is in exactly one package" \
    diff "$work/all.list" "$work/packaged.list"

# ---- install into a scratch root -----------------------------------------
root="$work/root"
for deb in "$runtime_deb" "$dev_deb" "$tool_deb"; do
    dpkg-deb -x "$deb" "$root"
done
export LD_LIBRARY_PATH="$root/$libdir"

# pkg-config: rlock.pc says prefix=/usr; PKG_CONFIG_SYSROOT_DIR moves it to
# the root. (--define-prefix cannot: it takes the prefix to be two levels
# above the .pc file, which a multiarch libdir breaks.)
system_pc=$(pkg-config --variable pc_path pkg-config)
pc_flags=$(PKG_CONFIG_PATH="" PKG_CONFIG_SYSROOT_DIR="$root" \
    PKG_CONFIG_LIBDIR="$root/$libdir/pkgconfig:$system_pc" \
    pkg-config --cflags --libs rlock)
echo "# pkg-config rlock: $pc_flags"
case " $pc_flags " in
*" -I$root/usr/include "*" -L$root/$libdir "*) ok "pkg-config finds the root's rlock.pc" ;;
*) not_ok "pkg-config finds the root's rlock.pc" "$pc_flags" ;;
esac
mkdir -p "$work/pc"
for prog in "$src/tests/consumer/main.c" "$here/lock_round_trip.c"; do
    name=$(basename "$prog" .c)
    # shellcheck disable=SC2086 # the flags are words
    check "pkg-config build of $name" \
        "$cc" -o "$work/pc/$name" "$prog" $pc_flags
done

# find_package(rlock) from the root.
if quiet "$work/cmake.log" cmake -S "$here/consumer" -B "$work/cm" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$root/usr" &&
    quiet "$work/cmake-build.log" cmake --build "$work/cm" -j2; then
    ok "find_package(rlock) build"
else
    not_ok "find_package(rlock) build"
fi
rlock_dir=$(sed -n 's/^rlock_DIR:[A-Z]*=//p' "$work/cm/CMakeCache.txt" 2>/dev/null)
check "find_package(rlock) found $libdir/cmake/rlock in the root" \
    test "$rlock_dir" = "$root/$libdir/cmake/rlock"

# ---- run -------------------------------------------------------------------
for bin in "$work/pc/main" "$work/cm/consumer"; do
    check "$(basename "$(dirname "$bin")")/$(basename "$bin") loads the root's $soname" \
        sh -c "ldd '$bin' | grep -q '$soname => $root/$libdir/$soname'"
    check "$(basename "$(dirname "$bin")")/$(basename "$bin") runs" "$bin"
done

port=
for _ in $(seq 20); do
    # below the kernel's ephemeral range, where other tests' outgoing
    # connections take ports; and only the server started here counts
    p=$((10000 + RANDOM % 12000))
    mkdir -p "$work/redis-$p"
    redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
        --dir "$work/redis-$p" >"$work/redis-$p/log" 2>&1 &
    redis_pid=$!
    for _ in $(seq 100); do
        if redis-cli -p "$p" info server 2>/dev/null |
            grep -q "^process_id:$redis_pid"; then
            port=$p
            break 2
        fi
        kill -0 "$redis_pid" 2>/dev/null || break
        sleep 0.05
    done
    kill -KILL "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=
done
if [ -z "$port" ]; then
    not_ok "start redis-server"
else
    url="redis://127.0.0.1:$port"
    check "pkg-config lock_round_trip takes a lock on $url" \
        "$work/pc/lock_round_trip" "$url" pkg-lock
    check "find_package lock_round_trip takes a lock on $url" \
        "$work/cm/lock_round_trip" "$url" cmake-lock
    check "the packaged rlock exec runs a command under a lock" sh -c \
        "'$root/usr/bin/rlock' --url '$url' exec tool-lock -- sh -c 'echo held' | grep -qx held"
    check "the packaged rlock info reads a lock" \
        "$root/usr/bin/rlock" --url "$url" info tool-lock
    check "no lock is left in Redis" \
        test "$(redis-cli -p "$port" dbsize)" = 0
fi

# ---- remove ----------------------------------------------------------------
rm -rf "$root"
check "the scratch root is removed" test ! -e "$root"
check "dpkg's database is unchanged" test \
    "$(dpkg-query -W -f '${Package} ${Status}\n' 2>/dev/null | sort)" = "$dpkg_before"

echo "1..$checks"
echo "# $((SECONDS - start)) s"
if [ "$failures" -ne 0 ]; then
    echo "# $failures of $checks checks failed"
    exit 1
fi
echo "# all $checks checks passed"
