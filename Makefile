# Convenience wrapper: `make` builds everything into build/ (tools in build/bin).
BUILD ?= build
PREFIX ?= /usr/local
CMAKE_FLAGS ?=

all: $(BUILD)/Makefile
	cmake --build $(BUILD) -j$$(nproc)

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)

check test: all
	cd $(BUILD) && ctest --output-on-failure

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)

.PHONY: all check test install clean
