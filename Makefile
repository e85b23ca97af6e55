# Convenience wrapper: `make` builds everything into build/ (tools in build/bin).
BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=

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

clean:
	rm -rf $(BUILD)

.PHONY: all check test install clean
