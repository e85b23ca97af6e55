// SPDX-License-Identifier: MIT
/*
 * standalone_main.c - replay fuzz inputs without libFuzzer.
 *
 * Calls LLVMFuzzerTestOneInput() once per file named on the command line
 * (a directory stands for the files in it), so that any compiler can build
 * the fuzz targets and ctest can replay their corpora under ASan/UBSan.
 * Each input is copied into a malloc'ed buffer of exactly its size, so that
 * a read past its end is an overflow the sanitizer sees (the c-ares
 * ares-fuzz.c pattern; style-by-example.md, fuzz targets).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t size;
	FILE *f;

	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: %s\n", path, f ? "not a regular file" : strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	size = (size_t)st.st_size;
	buf = malloc(size ? size : 1);
	if (!buf || fread(buf, 1, size, f) != size) {
		fprintf(stderr, "%s: short read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, size);
	free(buf);
	return 0;
}

static int replay_dir(const char *path, unsigned *count)
{
	struct dirent *de;
	char sub[4096];
	DIR *d;
	int ret = 0;

	d = opendir(path);
	if (!d) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (replay_file(sub))
			ret = -1;
		else
			(*count)++;
	}
	closedir(d);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	struct stat st;
	int i, ret = 0;

	for (i = 1; i < argc; i++) {
		if (!stat(argv[i], &st) && S_ISDIR(st.st_mode)) {
			if (replay_dir(argv[i], &count))
				ret = 1;
		} else if (replay_file(argv[i])) {
			ret = 1;
		} else {
			count++;
		}
	}
	if (!count) {
		fprintf(stderr, "usage: %s FILE|DIR...: no input replayed\n", argv[0]);
		return 1;
	}
	printf("replayed %u input(s)\n", count);
	return ret;
}
