# SPDX-License-Identifier: GPL-2.0
#
# htmm: the entry points.  `make help` lists them.

TOP       := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD     := $(TOP)/build
KSRC      := $(BUILD)/linux
KOBJ      := $(BUILD)/kbuild-guest
BZIMAGE   := $(KOBJ)/arch/x86/boot/bzImage
INITRAMFS := $(BUILD)/initramfs.cpio.gz
JOBS      ?= $(shell nproc)
NEED      := sh $(TOP)/scripts/need.sh

GUEST_FRAGMENTS := $(TOP)/kernel-config/guest.config $(TOP)/kernel-config/htmm.config
DEBUG_FRAGMENTS := $(GUEST_FRAGMENTS) $(TOP)/kernel-config/debug.config
KOBJ_DEBUG      := $(BUILD)/kbuild-debug

# Options of the guest: make test FAST_MEM=1G SLOW_MEM=1G CPUS=2
FAST_MEM  ?= 1G
SLOW_MEM  ?= 1G
CPUS      ?= 2
TIMEOUT   ?= 1800
# The debug guest: its placement tests wait up to four times longer.
TIMEOUT_DEBUG ?= 3600
# The emulated slow tier (qemu/plugin/slowtier.c): SLOW_TIER=NS adds NS per
# miss to node 1, SLOW_TIER=default the plugin's calibrated latency, 0 counts
# only; empty, no plugin.  make shell SLOW_TIER=default
SLOW_TIER ?=
BOOT_OPTS  = --kernel $(BZIMAGE) --initrd $(INITRAMFS) \
	     --fast-mem $(FAST_MEM) --slow-mem $(SLOW_MEM) --cpus $(CPUS) \
	     $(if $(SLOW_TIER),--slow-tier $(SLOW_TIER))

DEB_PACKAGES := linux-source-6.12 qemu-system-x86 busybox-static \
	gcc make flex bison bc libelf-dev libssl-dev cpio perl python3 \
	ccache git xz-utils rsync file libdw-dev gnuplot-nox man-db \
	python3-ply python3-git redis-server redis-tools numactl \
	linux-config-6.12 gcc-aarch64-linux-gnu dpkg-dev kmod

space := $(subst ,, )

.PHONY: kernel-distro-check deb-config deb bench bench-boot test-one bench-sampling bench-tiering test-debug kernel-debug help deps kernel kernel-reset patches checkpatch check-series selftests \
	userspace install initramfs test demo shell clean distclean deps-check

help:
	@echo "htmm: hot pages in the fast memory tier"
	@echo
	@echo "  make demo        boot the two-tier guest and show what htmm does"
	@echo "  make test        build everything, boot the guest, run all tests"
	@echo "  make test-debug  the same on a KASAN/lockdep/kmemleak kernel"
	@echo "  make test-one T=tiering:-r:tiering.hot_set_is_promoted"
	@echo "                   one kselftest program in the guest, with harness"
	@echo "                   options after ':' (KUnit runs at boot too)"
	@echo "                   DEBUG=1: on the debug kernel"
	@echo "  make shell       interactive guest on the serial console (Ctrl-A X quits)"
	@echo "  make bench       htmm against NUMA-balancing tiering and DAMON, node 1 made"
	@echo "                   really slower by the emulated slow tier (bench-results/)"
	@echo "                   BENCH_BOOTS=N: N boots, and the spread of each figure"
	@echo "  make bench-sampling  figures of the sampling pipeline in the guest"
	@echo "  make bench-tiering   figures of promotion: time to 90%, throughput, cpu"
	@echo "  make plugin      build the QEMU plugin of the emulated slow tier"
	@echo "                   (SLOW_TIER=default|NS loads it for shell, demo, test)"
	@echo "  make deps        install the Debian packages the project needs (root)"
	@echo "  make kernel      unpack linux-source-6.12, apply patches/, build bzImage"
	@echo "  make kernel-distro-check  the series' objects with W=1, on Debian's own"
	@echo "                   amd64 configuration and cross-built for arm64"
	@echo "  make deb         installable kernel packages: Debian's configuration with"
	@echo "                   htmm (build/deb/; hours on 2 cores)"
	@echo "  make deb-config  only the configuration make deb builds, checked"
	@echo "  make patches     regenerate patches/ from the commits in build/linux"
	@echo "  make checkpatch  run checkpatch.pl --strict on every patch"
	@echo "  make check-series  build the kernel at every patch of the series"
	@echo "  make kernel-reset  drop commits in build/linux that are not in patches/"
	@echo "  make install     build and install the tools, libhtmm and the man pages"
	@echo "                   (PREFIX=/usr/local, DESTDIR= for staging)"
	@echo "  make clean       remove build outputs but keep the kernel tree"
	@echo "  make distclean   remove build/ entirely"

deps:
	@sh $(TOP)/scripts/deps.sh $(DEB_PACKAGES)

kernel:
	@$(NEED) gcc make flex bison bc perl git xz ccache cpio \
		file:/usr/src/linux-source-6.12.tar.xz:linux-source-6.12 \
		file:/usr/include/libelf.h:libelf-dev \
		file:/usr/include/openssl/ssl.h:libssl-dev
	@bash $(TOP)/scripts/kernel-tree.sh sync
	@bash $(TOP)/scripts/kernel-tree.sh version
	@JOBS=$(JOBS) bash $(TOP)/scripts/kernel-build.sh guest $(GUEST_FRAGMENTS)

# The debug kernel: KASAN, lockdep, kmemleak, DEBUG_VM, fault injection.
kernel-debug: kernel
	@JOBS=$(JOBS) bash $(TOP)/scripts/kernel-build.sh debug $(DEBUG_FRAGMENTS)

# A real machine's kernel: Debian's configuration with htmm on top
# (scripts/kernel-distro.sh).
DISTRO_NEED := $(NEED) gcc make flex bison bc perl git xz ccache \
	file:/usr/src/linux-config-6.12:linux-config-6.12
kernel-distro-check: kernel
	@$(DISTRO_NEED) aarch64-linux-gnu-gcc
	@JOBS=$(JOBS) bash $(TOP)/scripts/kernel-distro.sh check amd64
	@JOBS=$(JOBS) bash $(TOP)/scripts/kernel-distro.sh check arm64

deb-config: kernel
	@$(DISTRO_NEED)
	@JOBS=$(JOBS) bash $(TOP)/scripts/kernel-distro.sh config

deb: kernel
	@$(DISTRO_NEED) dpkg-buildpackage depmod
	@JOBS=$(JOBS) bash $(TOP)/scripts/kernel-distro.sh deb

kernel-reset:
	@bash $(TOP)/scripts/kernel-tree.sh reset

patches:
	@bash $(TOP)/scripts/kernel-tree.sh export

checkpatch:
	@bash $(TOP)/scripts/checkpatch.sh

# Build the kernel at every patch of the series (slow: a header change
# rebuilds most of the kernel).
check-series: kernel
	@JOBS=$(JOBS) bash $(TOP)/scripts/check-series.sh

# The kselftests: selftests/ is placed as tools/testing/selftests/htmm in the
# tree and built by the kselftest framework against the tree's uapi headers.
KST_OUT := $(BUILD)/kselftest
selftests: kernel
	@rsync -a --delete $(TOP)/selftests/htmm/ $(KSRC)/tools/testing/selftests/htmm/
	@rm -rf $(KST_OUT)
	@$(MAKE) -s -C $(KSRC)/tools/testing/selftests TARGETS=htmm O=$(KOBJ) \
		KSFT_INSTALL_PATH=$(KST_OUT) install >$(BUILD)/kselftest.log 2>&1 || \
		{ cat $(BUILD)/kselftest.log; echo "selftests: build failed"; exit 1; }

userspace:
	@$(NEED) gcc
	@if [ -f $(TOP)/userspace/Makefile ]; then \
		$(MAKE) -s -C $(TOP)/userspace O=$(BUILD)/userspace \
			UAPI_INCLUDE=$(KOBJ)/usr/include; fi

# The tools, libhtmm, <htmm.h> and the man pages, under $(DESTDIR)$(PREFIX).
PREFIX  ?= /usr/local
DESTDIR ?=
install: userspace
	@$(MAKE) -s -C $(TOP)/userspace O=$(BUILD)/userspace \
		UAPI_INCLUDE=$(KOBJ)/usr/include PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) install

# The QEMU plugin of the emulated slow tier, loaded by qemu/host/boot.sh.
PLUGIN := $(BUILD)/plugin/slowtier.so
.PHONY: plugin
plugin: $(PLUGIN)
$(PLUGIN): $(TOP)/qemu/plugin/slowtier.c $(TOP)/qemu/plugin/qemu-plugin-api.h
	@$(NEED) gcc
	@mkdir -p $(dir $@)
	@gcc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -pthread \
		-Wall -Wextra -Werror -o $@ $<

initramfs: selftests userspace
	@$(NEED) busybox cpio gzip
	@bash $(TOP)/qemu/guest/mkinitramfs.sh $(INITRAMFS) $(KST_OUT) $(BUILD)/userspace

test: deps-check plugin
	@$(MAKE) -s initramfs
	@python3 $(TOP)/qemu/host/run-tests.py $(BOOT_OPTS) --timeout $(TIMEOUT) \
		--log $(BUILD)/guest-test.log

# One kselftest program, for a developer: T=program[:option:...], the
# harness's options separated by ':' (T=tiering:-r:tiering.hot_set_is_promoted).
# Not judged against qemu/host/expected-results: read its TAP.
# DEBUG=1 runs it on the debug kernel, as make test-debug does.
T ?=
DEBUG ?=
test-one: deps-check plugin
	@test -n "$(T)" || { echo "make test-one: say which, e.g. T=tiering:-r:tiering.hot_set_is_promoted" >&2; exit 2; }
	@$(MAKE) -s initramfs $(if $(DEBUG),kernel-debug)
	@bash $(TOP)/qemu/host/boot.sh $(BOOT_OPTS) --mode test --timeout $(TIMEOUT) \
		$(if $(DEBUG),--kernel $(KOBJ_DEBUG)/arch/x86/boot/bzImage) \
		--log $(BUILD)/guest-test-one.log --tap $(BUILD)/guest-test-one.log.tap \
		--append "htmm_only=$(T)$(if $(DEBUG), htmm_debug=1)"
	@cat $(BUILD)/guest-test-one.log.tap
	@grep -q "^HTMM-GUEST-END rc=0" $(BUILD)/guest-test-one.log.tap

# The suite on the debug kernel; fails also if a checker did not come up.
test-debug: deps-check plugin
	@$(MAKE) -s kernel-debug initramfs
	@python3 $(TOP)/qemu/host/run-tests.py --kernel $(KOBJ_DEBUG)/arch/x86/boot/bzImage \
		--initrd $(INITRAMFS) --fast-mem $(FAST_MEM) --slow-mem $(SLOW_MEM) \
		--cpus $(CPUS) --timeout $(TIMEOUT_DEBUG) --debug --log $(BUILD)/guest-test-debug.log

demo: deps-check plugin
	@$(MAKE) -s initramfs
	@bash $(TOP)/qemu/host/boot.sh $(BOOT_OPTS) --mode demo --timeout 600 \
		--log $(BUILD)/guest-demo.log

# Figures of the sampling pipeline: make bench-sampling BENCH_ARGS="128M 10"
BENCH_ARGS ?= 128M 10
bench-sampling: deps-check plugin
	@$(MAKE) -s initramfs
	@bash $(TOP)/qemu/host/boot.sh $(BOOT_OPTS) --mode bench --timeout 900 \
		--append "htmm_bench_args=$(subst $(space),:,$(BENCH_ARGS))" \
		--log $(BUILD)/guest-bench.log

# Figures of promotion: make bench-tiering TIERING_ARGS="128M 16M 30"
TIERING_ARGS ?= 128M 16M 30
bench-tiering: deps-check plugin
	@$(MAKE) -s initramfs
	@bash $(TOP)/qemu/host/boot.sh $(BOOT_OPTS) --mode bench --timeout 900 \
		--append "htmm_bench=tiering htmm_bench_args=$(subst $(space),:,$(TIERING_ARGS))" \
		--log $(BUILD)/guest-bench-tiering.log

# The tiering benchmark: every workload (and Redis) under no tiering,
# NUMA-balancing tiering, DAMON and htmm, in one boot, with node 0 smaller
# than the buffer, and node 1 really slower: the emulated slow tier
# (BENCH_SLOW_TIER: the plugin's calibrated latency by default, NS for
# another, empty for none) counts each run's accesses per node.
# make bench [BENCH_COMPARE="SIZE HOTSIZE SECONDS [WORKLOADS [SYSTEMS]]"]
BENCH_FAST_MEM ?= 512M
BENCH_SLOW_MEM ?= 1536M
BENCH_COMPARE  ?= 768M 64M 40
BENCH_SLOW_TIER ?= default
BENCH_OUT      ?= $(TOP)/bench-results
BENCH_STAR     := $(BUILD)/bench-compare.slowtier.csv
# BENCH_BOOTS=N: N boots one after the other, each into $(BENCH_OUT)/boot-K,
# then the median, min and max of each figure over them into $(BENCH_OUT)
# (qemu/host/bench-spread.py): one boot's figures vary from the next's.
# They are made in $(BENCH_OUT).new, which replaces $(BENCH_OUT) once all
# went well: a failed boot leaves the results of the last run as they were.
BENCH_BOOTS    ?= 1
bench: deps-check plugin
	@case "$(BENCH_BOOTS)" in ''|*[!0-9]*|0*) \
		echo "make bench: BENCH_BOOTS is a number of boots, 1 or more, not '$(BENCH_BOOTS)'" >&2; \
		exit 2;; esac
	@if [ "$(BENCH_BOOTS)" = 1 ]; then \
		$(MAKE) -s bench-boot; \
	else \
		rm -rf '$(BENCH_OUT).new' && mkdir -p '$(BENCH_OUT).new' && \
		for k in $$(seq $(BENCH_BOOTS)); do \
			echo "make bench: boot $$k of $(BENCH_BOOTS)"; \
			$(MAKE) -s bench-boot BENCH_OUT='$(BENCH_OUT).new'/boot-$$k || \
				{ echo "make bench: the boots so far are in $(BENCH_OUT).new" >&2; exit 1; }; \
		done && \
		python3 $(TOP)/qemu/host/bench-spread.py '$(BENCH_OUT).new' \
			$$(seq -f '$(BENCH_OUT).new/boot-%g' $(BENCH_BOOTS)) && \
		rm -rf '$(BENCH_OUT)' && mv '$(BENCH_OUT).new' '$(BENCH_OUT)'; \
	fi

# One boot of the benchmark, into $(BENCH_OUT).
bench-boot: deps-check plugin
	@$(MAKE) -s initramfs
	@$(NEED) gnuplot
	@rm -f $(BENCH_STAR)
	@bash $(TOP)/qemu/host/boot.sh --kernel $(BZIMAGE) --initrd $(INITRAMFS) \
		--fast-mem $(BENCH_FAST_MEM) --slow-mem $(BENCH_SLOW_MEM) --cpus $(CPUS) \
		$(if $(BENCH_SLOW_TIER),--slow-tier $(BENCH_SLOW_TIER) --slow-tier-out $(BENCH_STAR)) \
		--mode bench --timeout 7200 --tap $(BUILD)/bench-compare.raw \
		--append "htmm_bench=compare htmm_bench_args=$(subst $(space),:,$(BENCH_COMPARE))" \
		--log $(BUILD)/guest-bench-compare.log
	@rm -rf $(BENCH_OUT) && mkdir -p $(BENCH_OUT)
	@cp $(BUILD)/bench-compare.raw $(BENCH_OUT)/raw.txt
	@if [ -n "$(BENCH_SLOW_TIER)" ]; then cp $(BENCH_STAR) $(BENCH_OUT)/slowtier.csv; fi
	@{ echo "commit $$(git -C $(TOP) rev-parse HEAD 2>/dev/null || echo unknown)$$(git -C $(TOP) \
		diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"; \
	   echo "kernel $$(git -C $(KSRC) rev-parse HEAD 2>/dev/null || echo unknown)"; \
	   echo "guest node 0 $(BENCH_FAST_MEM), node 1 $(BENCH_SLOW_MEM), $(CPUS) cpus"; \
	   echo "slow tier: $(if $(BENCH_SLOW_TIER),$$(grep -m1 '^# slowtier' $(BENCH_STAR)),none)"; \
	   echo "args $(BENCH_COMPARE)"; } > $(BENCH_OUT)/commit.txt
	@python3 $(TOP)/qemu/host/bench-report.py $(BENCH_OUT)/raw.txt $(BENCH_OUT) \
		$(if $(BENCH_SLOW_TIER),$(BENCH_OUT)/slowtier.csv)

shell: deps-check plugin
	@$(MAKE) -s initramfs
	@bash $(TOP)/qemu/host/boot.sh $(BOOT_OPTS) --mode shell

# The commands a new user runs (`make demo`, `make test`) install what they
# need first; deps.sh is quick when everything is there.
deps-check:
	@if ! sh $(TOP)/scripts/deps.sh --check $(DEB_PACKAGES) 2>/dev/null; then \
		echo "installing missing packages with 'make deps'"; \
		sh $(TOP)/scripts/deps.sh $(DEB_PACKAGES); \
	fi

clean:
	rm -rf $(BUILD)/kbuild-* $(BUILD)/kselftest* $(BUILD)/userspace $(BUILD)/plugin \
		$(BUILD)/initramfs* $(BUILD)/stamps/kbuild-* $(BUILD)/*.log
	@$(MAKE) -s -C $(TOP)/userspace clean O=$(BUILD)/userspace 2>/dev/null || true

distclean:
	rm -rf $(BUILD)
