# imageguard: plain GNU make. `make help` lists the targets.
PKG_CONFIG ?= pkg-config
CC ?= cc
PREFIX ?= /usr/local
PKGS := libcurl yaml-0.1 jansson libgit2 libpcre2-8 libmicrohttpd libcrypto gpgme yajl
TEST_PKGS := check

# SANITIZE=1 builds everything with ASan+UBSan into its own tree; COVERAGE=1 instruments it for
# gcov (-O0, a tree of its own too: build-cov, or build-asan-cov with both).
ifeq ($(SANITIZE),1)
TREE := build-asan
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
TREE := build
SAN_FLAGS :=
endif
ifeq ($(COVERAGE),1)
TREE := $(TREE)-cov
SAN_FLAGS += --coverage
CFLAGS ?= -O0 -g
endif
BUILD ?= $(TREE)

WERROR := $(if $(CI),-Werror,)
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Wpedantic \
	$(WERROR) $(SAN_FLAGS) $(CFLAGS) -Iinclude -MMD -MP \
	$(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lpthread -lm
# The front binary runs eval, check-config, markers and lint itself and execs imageguard-tags
# for tags and imageguard-full for the rest (src/main.c): each links only what its commands
# need. The tags binary's list is what the linker asks for when main.c references cmd_tags only.
FRONT_LIBS := $(shell $(PKG_CONFIG) --libs libpcre2-8 yaml-0.1 jansson 2>/dev/null) -lpthread -lm
TAGS_LIBS := $(shell $(PKG_CONFIG) --libs libcurl libcrypto jansson yajl libpcre2-8 yaml-0.1 \
	2>/dev/null) -lpthread -lm
TEST_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS := $(shell $(PKG_CONFIG) --libs $(TEST_PKGS) 2>/dev/null)
LDFLAGS += $(SAN_FLAGS)

# Every src/<layer>/*.c goes into the one static library; src/main.c is the command table.
LAYERS := util template policy registry sigstore git markers config kube guard report pass inspect controller cmd
LIB_SRCS := $(sort $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c)))
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
LIB := $(BUILD)/libimageguard.a
BIN := $(BUILD)/imageguard
TAGS_BIN := $(BUILD)/imageguard-tags
FULL_BIN := $(BUILD)/imageguard-full
TEST_SRCS := $(sort $(wildcard test/unit/*/test_*.c))
TEST_BINS := $(TEST_SRCS:%.c=$(BUILD)/%)
TEST_SUPPORT := $(sort $(wildcard test/support/*.c))
# Test drivers outside the unit suites: the signature gate's (test/sigstore/sigcheck.c).
TEST_TOOLS := $(BUILD)/test/sigcheck
TEST_SUPPORT_OBJS := $(TEST_SUPPORT:test/support/%.c=$(BUILD)/test/support/%.o)

.PHONY: all check unit deps lint format memcheck bench fuzz demo image install clean help coverage chaos \
	mutate
all: $(BIN) $(TAGS_BIN) $(FULL_BIN)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/main-front.o: src/main.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DIMAGEGUARD_FRONT -c -o $@ $<

$(BUILD)/obj/main-tags.o: src/main.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DIMAGEGUARD_TAGS -c -o $@ $<

# The front binary is useless without the two it execs: building it builds them.
$(BIN): $(BUILD)/obj/main-front.o $(LIB) | $(TAGS_BIN) $(FULL_BIN)
	$(CC) $(LDFLAGS) -o $@ $^ $(FRONT_LIBS)

$(TAGS_BIN): $(BUILD)/obj/main-tags.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(TAGS_LIBS)

$(FULL_BIN): $(BUILD)/obj/main.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/test/support/%.o: test/support/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c -o $@ $<

$(BUILD)/test/unit/%.o: test/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Itest $(TEST_CFLAGS) -c -o $@ $<

$(BUILD)/test/unit/%: $(BUILD)/test/unit/%.o $(TEST_SUPPORT_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(filter-out $(LIB),$^) $(LIB) $(TEST_LIBS) $(LIBS)

# decide's suite links without libcurl and libgit2: the decision path reaches the registry
# only through its callbacks (src/guard/decide.h).
DECIDE_SUPPORT := $(filter-out %/fixture.o,$(TEST_SUPPORT_OBJS))
$(BUILD)/test/unit/guard/test_decide: $(BUILD)/test/unit/guard/test_decide.o $(DECIDE_SUPPORT) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(filter-out $(LIB),$^) $(LIB) $(TEST_LIBS) $(FRONT_LIBS) -ldl

# The signature gate on one bundle file or one image in a registry, for the cross-check with the
# reference verifier (test/integration/cli/sigstore_crosscheck.py).
$(BUILD)/test/sigcheck: test/sigstore/sigcheck.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LIBS)

.SECONDARY:

# Installs missing build/test dependencies (a fast no-op when all are present).
deps:
	@scripts/install-deps

# make check: dependencies, build, unit suites, then the integration tests against real peers.
# With COVERAGE=1, then the lines covered per file and overall (scripts/coverage), failing below
# its floors: CI runs `make check SANITIZE=1 COVERAGE=1`, one run for both verdicts.
check: deps
	@$(MAKE) --no-print-directory $(BIN) $(TEST_BINS) $(TEST_TOOLS)
ifeq ($(COVERAGE),1)
	@find $(BUILD) -name '*.gcda' -delete
	@BUILD=$(BUILD) test/run; rc=$$?; scripts/coverage $(BUILD) || rc=1; exit $$rc
else
	@BUILD=$(BUILD) test/run
endif

unit: $(TEST_BINS)
	@BUILD=$(BUILD) test/run --unit

# Unit suites under valgrind memcheck: zero leaks, zero errors.
memcheck: $(TEST_BINS)
	@BUILD=$(BUILD) test/run --unit --valgrind

# Line coverage (gcov): make check in an instrumented tree (build-cov/), then the lines
# covered per file and overall (scripts/coverage), failing below its floors.
coverage:
	@$(MAKE) --no-print-directory check COVERAGE=1

# Mutation testing (issue 39, docs/testing.md "Mutation"): each mutation of test/mutations.txt
# applied in turn to a copy of the tree, the unit suites of the mutated file rebuilt and run
# (scripts/mutate); fails below 95% killed. MUTATE_SMOKE=N runs N drawn with a fixed seed and
# fails if one survives (CI runs 5).
MUTATE_SMOKE ?=
mutate:
	@MUTATE_SMOKE=$(MUTATE_SMOKE) scripts/mutate

# libFuzzer targets under ASan+UBSan (clang, build-fuzz/), FUZZ_SECONDS each (default 30).
fuzz:
	@test/fuzz/run

# Every C file of the tree; make lint (scripts/lint) checks that make format leaves no diff.
FORMAT_FILES = src/main.c $(LIB_SRCS) $(wildcard src/*/*.h) $(wildcard include/imageguard/*/*.h) \
	$(TEST_SRCS) $(wildcard test/support/*.[ch] test/fuzz/*.[ch] bench/*.c)

lint:
	@scripts/lint

format:
	clang-format -i $(FORMAT_FILES)

# Benchmark drivers: bench/<name>.c -> $(BUILD)/bench/<name>, linked against the library.
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(sort $(wildcard bench/*.c)))
$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LIBS)

# The end-to-end demo (CONTRACT §9): a real registry and Git remote, a downgrade blocked.
demo: deps
	@$(MAKE) --no-print-directory $(BIN)
	@IMAGEGUARD=$(abspath $(BIN)) scripts/demo

# The container image from Containerfile with buildah on a debootstrap base (root; slow: its
# own CI step, test/image/run_image.py).
image: deps
	@scripts/build-image

bench: deps
	@$(MAKE) --no-print-directory $(BIN) $(BENCH_BINS)
	@BUILD=$(BUILD) bench/run

# Multi-replica chaos (issue 17): leader election, kill -9, SIGTERM, API blackhole, re-sharding
# over 30 remotes, then the invariant checker (test/chaos/run; CHAOS_SEED, CHAOS_SECONDS).
# Not part of make check; CI runs it once on the plain build.
chaos: deps
	@$(MAKE) --no-print-directory $(BIN)
	@IMAGEGUARD=$(abspath $(BIN)) test/chaos/run

# The three binaries, where src/main.c looks for imageguard-tags and imageguard-full: beside
# the front binary's directory in ../libexec/imageguard/.
install: $(BIN) $(TAGS_BIN) $(FULL_BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/imageguard
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/imageguard
	install -m 0755 $(TAGS_BIN) $(DESTDIR)$(PREFIX)/libexec/imageguard/imageguard-tags
	install -m 0755 $(FULL_BIN) $(DESTDIR)$(PREFIX)/libexec/imageguard/imageguard-full

clean:
	rm -rf build build-asan build-fuzz build-cov build-asan-cov

help:
	@echo "targets: all check unit memcheck coverage mutate demo image bench chaos fuzz lint format install clean"
	@echo "options: SANITIZE=1 (ASan+UBSan build in build-asan/), COVERAGE=1 (gcov, -cov tree; both: build-asan-cov/), CI=1 (-Werror), MUTATE_SMOKE=N"

-include $(LIB_OBJS:.o=.d) $(BUILD)/obj/main.d $(BUILD)/obj/main-front.d $(BUILD)/obj/main-tags.d \
	$(TEST_BINS:=.d)
