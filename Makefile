# SPDX-License-Identifier: GPL-2.0
#
# vroce: build the module for every supported Debian kernel whose headers are
# installed, or for one (KVER=<release>, or KVER=debug / KVER=kcsan for the
# test kernels of tools/testing/vm/debug-kernel.sh).
#
#   make                 build build/<release>/vroce.ko for each kernel
#   make KVER=<release>  build one; a sid kernel (KVER=7.2.13+deb14-amd64 or
#                        -rt-amd64) builds in the Debian sid root of
#                        tools/sid-root.sh (set up at the first such build)
#   make W=1 C=1         extra warnings and sparse (passed to kbuild)
#   make lint            checkpatch --strict on our sources
#   make check           every test, in QEMU, on 6.12, 6.1 and the debug kernel;
#                        the data-race (kcsan) kernel runs the concurrent ones
#   make demo            two namespaces, a veth pair and a vroce device each
#   make bench           perftest on vroce and rdma_rxe side by side, in QEMU
#   make incast          congestion-control incast benchmark in the VM (not a test)
#   make install         install the module for the running kernel (real host)
#   make dkms-deb        build/vroce-dkms_<version>_all.deb (tools/dkms-deb.sh)
#   make kernels         the supported kernel releases, one per line

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := $(TOP)/build
MODDIR := drivers/infiniband/sw/vroce

# Supported kernel lines: Debian 6.12 LTS (bookworm-backports) and 6.1 LTS.
SUPPORTED_RE := ^6\.(12|1)\.
INSTALLED := $(notdir $(wildcard /lib/modules/*))
DETECTED := $(foreach k,$(INSTALLED),$(if $(and $(wildcard /lib/modules/$(k)/build/Makefile),$(shell echo $(k) | grep -E '$(SUPPORTED_RE)')),$(k)))
KVERS := $(if $(KVER),$(KVER),$(DETECTED))

KBUILD_ARGS := $(if $(W),W=$(W)) $(if $(C),C=$(C)) $(if $(V),V=$(V))

# Debian sid's kernels build in the sid root (tools/sid-root.sh), with its
# compiler, by this Makefile run there on the same tree, unless this host
# has their headers itself.
SID_RE := ^7\.2\.
SID_ARGS = $(KBUILD_ARGS) $(if $(KCFLAGS),KCFLAGS="$(KCFLAGS)") -j$(or $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS))),1)

.PHONY: all modules clean lint check demo incast soak install help deps dkms-deb kernels FORCE

all: modules

modules: $(foreach k,$(KVERS),$(BUILD)/$(k)/vroce.ko)

kdir_of = $(if $(filter debug kcsan,$(1)),$(shell $(TOP)/tools/testing/vm/debug-kernel.sh dir $(1))/obj,/lib/modules/$(1)/build)

# The module is built in a per-kernel mirror of the source tree made of
# symlinks, so that objects for different kernels never mix.
$(BUILD)/%/vroce.ko: FORCE
	@test -n "$*" || { echo "no supported kernel headers found" >&2; exit 1; }
	@kdir="$(call kdir_of,$*)"; \
	if [ ! -f "$$kdir/Makefile" ] && echo "$*" | grep -qE '$(SID_RE)'; then \
		$(TOP)/tools/sid-root.sh setup >/dev/null || exit 1; \
		exec $(TOP)/tools/sid-root.sh run make --no-print-directory -C $(TOP) KVER=$* $(SID_ARGS) $@; \
	fi; \
	test -f "$$kdir/Makefile" || { echo "vroce: no kernel build dir for $* ($$kdir)" >&2; exit 1; }; \
	out="$(BUILD)/$*/src"; \
	mkdir -p "$$out"; \
	find "$$out" -type l -delete; \
	cp -as $(TOP)/Kbuild $(TOP)/VERSION $(TOP)/drivers $(TOP)/include "$$out"/; \
	$(MAKE) -C "$$kdir" M="$$out" $(KBUILD_ARGS) $(if $(filter debug kcsan,$*),VROCE_DEBUG=y) modules && \
	ln -sf src/$(MODDIR)/vroce.ko $@

lint:
	@$(TOP)/tools/lint.sh

check:
	@$(TOP)/tools/check.sh

demo:
	@$(TOP)/tools/demo.sh

.PHONY: bench
bench:
	@$(TOP)/tools/bench/bench.sh

incast:
	@$(TOP)/tools/bench/incast.sh

# The fuzzers and a mixed load on the debug kernel: SOAK_MINUTES=60.
soak:
	@$(TOP)/tools/soak.sh

deps:
	@$(TOP)/tools/deps.sh

dkms-deb:
	@$(TOP)/tools/dkms-deb.sh

kernels:
	@$(TOP)/tools/kernels.sh all

# Install for the running kernel (or KVER=...) on a real host.
IKVER := $(if $(KVER),$(KVER),$(shell uname -r))
install: $(BUILD)/$(IKVER)/vroce.ko
	$(MAKE) -C /lib/modules/$(IKVER)/build M=$(BUILD)/$(IKVER)/src modules_install
	depmod -a $(IKVER)

clean:
	rm -rf $(BUILD)
	find $(TOP) \( -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' \
		-o -name '.*.cmd' -o -name modules.order -o -name Module.symvers \) \
		-not -path '$(TOP)/.git/*' -delete

FORCE:
