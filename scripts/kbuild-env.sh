# SPDX-License-Identifier: GPL-2.0
#
# The environment of every kernel build here, sourced by kernel-build.sh,
# check-series.sh and kernel-distro.sh (TOP set to the project's top).
#
# ccache: one cache for every clone of the project on this machine.  Paths
# under the project are hashed relative to it, so a fresh clone in another
# folder (as CI makes) still hits the cache.  The build's identity is
# fixed, so that a kernel built twice is the same.
export CCACHE_BASEDIR=$TOP
export CCACHE_NOHASHDIR=1
export CCACHE_COMPILERCHECK=content
export KBUILD_BUILD_USER=htmm KBUILD_BUILD_HOST=htmm
export KBUILD_BUILD_TIMESTAMP="2024-11-17"
