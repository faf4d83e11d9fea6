#!/usr/bin/env bash
# Gathers real photographs from Debian packages for int8 calibration and accuracy checks of the
# ImageNet classifiers, as two disjoint sets: OUTDIR/calibration (56 photos: scenes, landscapes,
# textures, leftovers) and OUTDIR/test (26 object-like photos: animals, fruit, vehicles, people).
#
#   models/collect_photos.sh [OUTDIR]      (default build/photos, relative to the repo root)
#
# Each photo is named SOURCEPACKAGE__NAME (e.g. test/opencv-doc__apple.jpg); OUTDIR/MANIFEST.txt
# lists every file with its package, version, original path and sha256. Every file is a baseline
# or progressive 8-bit JPEG or an 8-bit PNG that stb_image reads, copied unchanged (no
# conversion). No two files are the same photo: stereo pairs and frame sequences contribute one
# frame only, and no test photo is a crop of a calibration one.
#
# Sources are fetched with `apt-get download` and only the listed files are unpacked
# (`dpkg-deb --fsys-tarfile`), so nothing is installed and no dependency comes along (installing
# python3-skimage would pull ~360 MB); a package that is already installed (darknet, by
# install_deps.sh) is copied from /. The .debs (about 195 MB together, mostly opencv-doc and
# mate-backgrounds) are deleted afterwards. Cheap to rerun: when every file is present nothing is
# downloaded and the run takes well under a second. Needs root only for `apt-get update`, which
# runs only when apt's package lists do not know a package. Set FORCE=1 to fetch everything again.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out_dir="${1:-build/photos}"
case "$out_dir" in /*) ;; *) out_dir="$repo_root/$out_dir" ;; esac

# set  package  path inside the package  [name; default: its basename]
# Looked at one by one: drawings, renders, screenshots, text pages, microscopy and second frames of
# stereo pairs / sequences are left out on purpose.
photo_table='
test  darknet                  /usr/share/darknet/data/dog.jpg
test  darknet                  /usr/share/darknet/data/eagle.jpg
test  darknet                  /usr/share/darknet/data/horses.jpg
calibration  darknet           /usr/share/darknet/data/giraffe.jpg
calibration  darknet           /usr/share/darknet/data/kite.jpg
calibration  darknet           /usr/share/darknet/data/person.jpg

test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/apple.jpg
test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/baboon.jpg
test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/butterfly.jpg
test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/chicky_512.png
test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/messi5.jpg
test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/orange.jpg
test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/smarties.png
test  opencv-doc  /usr/share/doc/opencv-doc/examples/data/squirrel_cls.jpg
test  opencv-doc  /usr/share/doc/opencv-doc/examples/dnn_superres/butterfly.png  dnn_superres_butterfly.png
test  opencv-doc  /usr/share/doc/opencv-doc/examples/hfs/data/000.jpg            hfs_000.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/alphamat/input_images/plant.jpg  alphamat_plant.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/aero1.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/aloeL.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/basketball1.png
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/board.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/box_in_scene.png
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/building.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/ela_original.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/fruits.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/graf1.png
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/home.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/leuvenA.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/licenseplate_motion.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/rubberwhale1.png
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/data/stuff.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/hfs/data/001.jpg      hfs_001.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/hfs/data/002.jpg      hfs_002.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/reg/home.png          reg_home.png
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/text/scenetext01.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/text/scenetext02.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/text/scenetext03.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/text/scenetext04.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/text/scenetext05.jpg
calibration  opencv-doc  /usr/share/doc/opencv-doc/examples/text/scenetext06.jpg

test  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/astronaut.png
test  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/chelsea.png
test  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/coffee.png
test  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/motorcycle_left.png
test  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/rocket.jpg
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/brick.png
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/camera.png
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/clock_motion.png
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/coins.png
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/grass.png
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/gravel.png
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/hubble_deep_field.jpg
calibration  python3-skimage  /usr/lib/python3/dist-packages/skimage/data/moon.png

test  python-matplotlib-data   /usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg
test  python3-sklearn          /usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg
calibration  python3-sklearn   /usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg

test  lomiri-wallpapers-16.04  /usr/share/backgrounds/Picture_0B_by_freespace.jpg
test  lomiri-wallpapers-16.04  /usr/share/backgrounds/Picture_1A_by_freespace.jpg
test  lomiri-wallpapers-16.04  /usr/share/backgrounds/friends_by_Aitzol_Berasategi.jpg
test  lomiri-wallpapers-16.04  /usr/share/backgrounds/greentock_by_Peter_Nerlich.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/Bridge_by_Sander_Klootwijk.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/Dragonfly_by_Bolly.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/Wine_by_Jakkub_Mede.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/aitzgorri_by_Aitzol_Berasategi.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/free_by_Peter_Nerlich.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/seeding_by_Clements_Engelhardt.jpg
calibration  lomiri-wallpapers-16.04  /usr/share/backgrounds/sunset_by_Aitzol_Berasategi.jpg
test  lomiri-wallpapers-20.04  /usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg

test  mate-backgrounds         /usr/share/backgrounds/mate/nature/LadyBird.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/Aqua.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/Blinds.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/Dune.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/FreshFlower.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/Garden.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/GreenMeadow.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/RainDrops.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/Storm.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/TwoWings.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/Wood.jpg
calibration  mate-backgrounds  /usr/share/backgrounds/mate/nature/YellowFlower.jpg
'
min_calibration=50
min_test=20

# Parse the table into parallel arrays, in table order (which is also the package order).
sets=() pkgs=() srcs=() dests=() packages=()
while read -r set pkg src name; do
    [[ -z "$set" || "$set" == \#* ]] && continue
    [[ "$set" == calibration || "$set" == test ]] || { echo "collect_photos: bad set $set" >&2; exit 2; }
    sets+=("$set") pkgs+=("$pkg") srcs+=("$src")
    dests+=("$set/${pkg}__${name:-$(basename "$src")}")
    [[ " ${packages[*]} " == *" $pkg "* ]] || packages+=("$pkg")
done <<<"$photo_table"

mkdir -p "$out_dir/calibration" "$out_dir/test" "$out_dir/.sources"

tmp_dir=""
cleanup() { [[ -n "$tmp_dir" ]] && rm -rf "$tmp_dir"; return 0; }
trap cleanup EXIT

apt_updated=0
# (Captured first: with pipefail, grep -q closing the pipe early would fail the whole test.)
have_candidate() {
    local policy
    policy="$(apt-cache policy "$1" 2>/dev/null)"
    [[ "$policy" == *"Candidate: "* && "$policy" != *"Candidate: (none)"* ]]
}

# fetch PKG: copies that package's photos into OUTDIR, from / when installed, else from its .deb.
fetch() {
    local pkg="$1" root version i
    local -a members=()
    for i in "${!pkgs[@]}"; do [[ "${pkgs[$i]}" == "$pkg" ]] && members+=(".${srcs[$i]}"); done
    if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" == "install ok installed" ]] &&
        (cd / && ls "${members[@]}" >/dev/null 2>&1); then
        root=/
        version="$(dpkg-query -W -f='${Version}' "$pkg")"
        echo "collect_photos: $pkg $version (installed)"
    else
        if ! have_candidate "$pkg" && ((!apt_updated)); then
            echo "collect_photos: apt-get update"
            apt-get update -qq
            apt_updated=1
        fi
        [[ -z "$tmp_dir" ]] && tmp_dir="$(mktemp -d)"
        local -a apt_opts=(-qq)
        # apt's _apt download user cannot write into a root-only mktemp folder; skip its sandbox.
        ((EUID == 0)) && apt_opts+=(-o APT::Sandbox::User=root)
        (cd "$tmp_dir" && apt-get download "${apt_opts[@]}" "$pkg")
        local deb
        deb="$(ls "$tmp_dir/${pkg}_"*.deb)"
        version="$(dpkg-deb -f "$deb" Version)"
        echo "collect_photos: $pkg $version ($(($(stat -c %s "$deb") / 1024)) KiB .deb)"
        root="$tmp_dir/$pkg"
        mkdir -p "$root"
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" "${members[@]}"
        rm -f "$deb"
    fi
    for i in "${!pkgs[@]}"; do
        [[ "${pkgs[$i]}" == "$pkg" ]] || continue
        cp "$root${srcs[$i]}" "$out_dir/${dests[$i]}.part"
        mv "$out_dir/${dests[$i]}.part" "$out_dir/${dests[$i]}"
    done
    echo "$version" >"$out_dir/.sources/$pkg"
}

fetched=0
for pkg in "${packages[@]}"; do
    complete=1
    [[ "${FORCE:-0}" == 1 || ! -s "$out_dir/.sources/$pkg" ]] && complete=0
    for i in "${!pkgs[@]}"; do
        [[ "${pkgs[$i]}" == "$pkg" && ! -s "$out_dir/${dests[$i]}" ]] && complete=0
    done
    ((complete)) && continue
    fetch "$pkg"
    fetched=1
done
((fetched)) || echo "collect_photos: all ${#dests[@]} photos present in $out_dir"

# Drop files that an older version of the table put there.
for f in "$out_dir"/calibration/* "$out_dir"/test/*; do
    [[ -e "$f" ]] || continue
    rel="${f#"$out_dir"/}"
    [[ " ${dests[*]} " == *" $rel "* ]] || { echo "collect_photos: removing stale $rel"; rm -f "$f"; }
done

# Check that stb_image can read every file (8-bit baseline/progressive JPEG, PNG of <= 8 bits, no
# file over 20 MB), that no photo appears twice, and write the manifest.
manifest_rows=()
for i in "${!dests[@]}"; do
    manifest_rows+=("${dests[$i]}	${pkgs[$i]}=$(cat "$out_dir/.sources/${pkgs[$i]}")	${srcs[$i]}")
done
read -r -d '' check_py <<'PY' || true
import hashlib, os, struct, sys

out_dir, min_cal, min_test = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def check(path):
    size = os.path.getsize(path)
    if size > 20 * 1024 * 1024:
        return "larger than 20 MB"
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        bit_depth = data[24]
        return None if bit_depth <= 8 else f"PNG bit depth {bit_depth}"
    if data[:2] != b"\xff\xd8":
        return "neither JPEG nor PNG"
    pos = 2
    while pos + 4 <= len(data):
        if data[pos] != 0xFF:
            return "broken JPEG marker stream"
        marker = data[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        length = struct.unpack(">H", data[pos + 2:pos + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            precision, comps = data[pos + 4], data[pos + 9]
            if marker not in (0xC0, 0xC1, 0xC2):
                return f"JPEG SOF{marker - 0xC0} (stb_image reads baseline/progressive only)"
            if precision != 8 or comps not in (1, 3):
                return f"JPEG precision {precision}, {comps} components"
            return None
        pos += 2 + length
    return "JPEG without a frame header"


rows, bad, seen = [], [], {}
counts = {"calibration": 0, "test": 0}
for line in sys.stdin.read().splitlines():
    rel, pkg, src = line.split("\t")
    path = os.path.join(out_dir, rel)
    problem = check(path)
    if problem:
        bad.append(f"{rel}: {problem}")
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if digest in seen:
        bad.append(f"{rel}: same bytes as {seen[digest]}")
    seen[digest] = rel
    counts[rel.split("/")[0]] += 1
    rows.append(f"{rel}\t{pkg}\t{src}\t{digest}")
if counts["calibration"] < min_cal or counts["test"] < min_test:
    bad.append(f"too few photos: {counts}")
if bad:
    sys.exit("collect_photos: " + "\n  ".join(["failed checks:"] + bad))
manifest = os.path.join(out_dir, "MANIFEST.txt")
text = ("# file\tsource package=version\toriginal path\tsha256\n"
        "# Made by models/collect_photos.sh; sources are Debian 12 packages, files copied unchanged.\n"
        + "".join(r + "\n" for r in rows))
if not os.path.exists(manifest) or open(manifest).read() != text:
    with open(manifest + ".part", "w") as f:
        f.write(text)
    os.replace(manifest + ".part", manifest)
print(f"collect_photos: {out_dir}: {counts['calibration']} calibration, {counts['test']} test photos")
PY
printf '%s\n' "${manifest_rows[@]}" | python3 -c "$check_py" "$out_dir" "$min_calibration" "$min_test"
