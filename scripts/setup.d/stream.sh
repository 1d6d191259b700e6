# STREAM 5.10 source for the STREAM check's build (sourced by scripts/setup).
#
# The source is not part of this repository. It ships inside ReFrame-HPC's
# source distribution on PyPI (examples/tutorial/stream/src/stream.c); this
# step downloads that sdist once with pip, extracts stream.c, checks its
# SHA-256 and keeps it in .venv/share/clusterproof/stream/. A second run only
# checks the checksum.

stream_version_sdist='ReFrame-HPC==4.10.4'
stream_member='examples/tutorial/stream/src/stream.c'
stream_sha256='a52bae5e175bea3f7832112af9c085adab47117f7d2ce219165379849231692b'
stream_dir="$repo/.venv/share/clusterproof/stream"
stream_src="$stream_dir/stream.c"

stream_sum() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }

if [ "$(stream_sum "$stream_src")" != "$stream_sha256" ]; then
  log "fetching the STREAM 5.10 source from the $stream_version_sdist source distribution (PyPI)"
  stream_tmp=$(mktemp -d)
  if ! "$repo/.venv/bin/python" -m pip download -q --no-deps --no-binary :all: \
        "$stream_version_sdist" -d "$stream_tmp" >"$stream_tmp/pip.log" 2>&1; then
    log "ERROR: could not download $stream_version_sdist from PyPI (pip output below)." >&2
    tail -5 "$stream_tmp/pip.log" >&2
    log "The STREAM check needs it to build STREAM; fix the network or proxy (PIP_INDEX_URL)" >&2
    log "and run scripts/setup again, or install stream_c.exe with: spack -e . install stream" >&2
    rm -rf "$stream_tmp"
    return 1 2>/dev/null || exit 1
  fi
  stream_tar=$(ls "$stream_tmp"/*.tar.gz 2>/dev/null | head -1)
  stream_top=$(basename "$stream_tar" .tar.gz)
  mkdir -p "$stream_dir"
  if ! tar -xzf "$stream_tar" -O "$stream_top/$stream_member" >"$stream_src.tmp" 2>/dev/null \
     || [ "$(stream_sum "$stream_src.tmp")" != "$stream_sha256" ]; then
    log "ERROR: $stream_tar has no $stream_member with SHA-256 $stream_sha256" >&2
    rm -rf "$stream_tmp" "$stream_src.tmp"
    return 1 2>/dev/null || exit 1
  fi
  mv "$stream_src.tmp" "$stream_src"
  rm -rf "$stream_tmp"
  log "STREAM source: $stream_src"
fi
