# Convenience wrapper: `make` builds everything into build/ (tools in build/bin).
#   make install PREFIX=/opt/umcast   install (default prefix /usr/local)
#   make uninstall                    remove what the last install put there
# Headers go to PREFIX/include/umcast and the functions' manual pages to
# section 3umcast, so an install never replaces rdma-core's <rdma/*.h>,
# <infiniband/*.h> or rdma_*(3) pages, whatever the prefix.
BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=
# What `make install` installed, one path a line: a copy of CMake's
# install_manifest.txt, which the next `cmake --install` (the tests make
# several) would replace.
MANIFEST ?= $(BUILD)/installed.txt

all: $(BUILD)/Makefile
	cmake --build $(BUILD) -j$$(nproc)

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

# The tests need their packages (scripts/deps.sh test): ON fails without them.
check test:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DUMC_TESTS=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$$(nproc)
	cd $(BUILD) && ctest --output-on-failure

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)
	cp $(BUILD)/install_manifest.txt $(MANIFEST)

# Every file of the manifest, then the directories of umcast's own that are
# left empty (include/umcast/..., lib/umcast/...; all of a prefix such as
# /opt/umcast); a shared prefix's directories (bin, lib, share/man) stay.
uninstall:
	@test -f $(MANIFEST) || { echo "make uninstall: no $(MANIFEST): nothing was installed from $(BUILD)"; exit 1; }
	xargs -d '\n' -r rm -f -- < $(MANIFEST)
	awk '{ d = $$0; sub("/[^/]*$$", "", d); \
		while (d ~ "/umcast(/|$$)") { print d; sub("/[^/]*$$", "", d) } }' $(MANIFEST) | \
		sort -ru | xargs -d '\n' -r rmdir --ignore-fail-on-non-empty --
	rm -f $(MANIFEST)

clean:
	rm -rf $(BUILD)

.PHONY: all check test install uninstall clean
