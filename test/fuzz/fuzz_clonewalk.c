/* The clone walk over hostile trees. The input is a small program that builds a tree in a
 * scratch root: directories, marked YAML files, files named Kustomization, huge sparse files,
 * FIFOs and symbolic links to everything outside (files, directories, a FIFO, "..", the root
 * itself), under odd names. Then everything reconcile and lint do with a clone runs over it:
 * the marker walk, a read and a rewrite of every marked file, the lint walk. Properties:
 * nothing outside the root is opened (inotify on the outside tree sees no event), nothing
 * outside changes, every file a marker names is a regular file below the root, and nothing
 * blocks (a FIFO opened for reading would hang past libFuzzer's -timeout). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "imageguard/inspect/lint.h"
#include "imageguard/markers/markers.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"
#include "imageguard/util/safefile.h"

#define OPS_MAX 48
#define DEPTH_MAX 6

static const char marked[] = "image: r.example/app:v1 # {\"$imagepolicy\": \"ns:p\"}\n";
static char base[256], root[300], outside[300];
static int watch_fd = -1;

/* Creates path with text; false when the name is taken (the program may repeat names). */
static bool put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw);

static void remove_base(void)
{
	nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* outside/: marked files, a directory, a FIFO; all watched for any open or change. */
static void make_outside(void)
{
	char p[400];
	const char *tmp = getenv("TMPDIR");

	/* tmpfs when there is one: every rewrite fsyncs, which a disk makes a hundred times
	 * slower */
	if (access("/dev/shm", W_OK) == 0)
		tmp = "/dev/shm";
	snprintf(base, sizeof(base), "%s/ig-clonewalk.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	FUZZ_CHECK(mkdtemp(base) != NULL);
	snprintf(root, sizeof(root), "%s/root", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	FUZZ_CHECK(mkdir(outside, 0700) == 0);
	snprintf(p, sizeof(p), "%s/sentinel.yaml", outside);
	FUZZ_CHECK(put(p, marked));
	snprintf(p, sizeof(p), "%s/dir", outside);
	FUZZ_CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof(p), "%s/dir/Kustomization", outside);
	FUZZ_CHECK(put(p, marked));
	snprintf(p, sizeof(p), "%s/fifo.yaml", outside);
	FUZZ_CHECK(mkfifo(p, 0600) == 0);
	atexit(remove_base);
	watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	FUZZ_CHECK(watch_fd >= 0);
	FUZZ_CHECK(inotify_add_watch(watch_fd, outside, IN_ALL_EVENTS) >= 0);
	snprintf(p, sizeof(p), "%s/dir", outside);
	FUZZ_CHECK(inotify_add_watch(watch_fd, p, IN_ALL_EVENTS) >= 0);
}

/* The number of events waiting (and drops them). */
static int drain(void)
{
	char ev[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int n = 0;
	ssize_t got;

	while ((got = read(watch_fd, ev, sizeof(ev))) > 0)
		n += (int)got;
	return n;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* A link target outside or around the root. */
static const char *target(unsigned k)
{
	static char t[8][400];

	snprintf(t[0], sizeof(t[0]), "%s/sentinel.yaml", outside);
	snprintf(t[1], sizeof(t[1]), "%s/dir", outside);
	snprintf(t[2], sizeof(t[2]), "%s/fifo.yaml", outside);
	snprintf(t[3], sizeof(t[3]), "%s", outside);
	snprintf(t[4], sizeof(t[4]), "../outside/sentinel.yaml");
	snprintf(t[5], sizeof(t[5]), "..");
	snprintf(t[6], sizeof(t[6]), ".");
	snprintf(t[7], sizeof(t[7]), "%s/dir/Kustomization", outside);
	return t[k % 8];
}

/* A name from the input: up to 12 bytes, never empty, "/" or NUL, "." or ".."; some fixed
 * names the walk treats specially. */
static void name_from(char *out, const uint8_t **p, size_t *n)
{
	static const char *const fixed[] = {
	    "Kustomization",         "a.yaml", "b.yml", ".git", "x.yaml.tmp",
	    "a.yaml.imageguard-tmp", "-",      "sub"};
	size_t len = 0, want;

	if (!*n) {
		snprintf(out, 16, "e.yaml");
		return;
	}
	want = **p % 16;
	(*p)++, (*n)--;
	if (want >= 12) {
		snprintf(out, 24, "%s", fixed[want % 8]);
		return;
	}
	while (len < want && *n) {
		char c = (char)**p;

		(*p)++, (*n)--;
		out[len++] = c == '/' || c == '\0' ? '_' : c;
	}
	out[len] = '\0';
	if (len == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		snprintf(out, 24, "n%zu.yaml", len);
}

/* Runs the program: each op is one byte (kind, argument) then, for creations, a name. */
static void build(const uint8_t *data, size_t size)
{
	char cwd[DEPTH_MAX + 1][1024], name[64], p[1200];
	int depth = 0;

	FUZZ_CHECK(mkdir(root, 0700) == 0);
	snprintf(cwd[0], sizeof(cwd[0]), "%s", root);
	for (int op = 0; op < OPS_MAX && size; op++) {
		uint8_t b = *data++;

		size--;
		if ((b & 7) == 5) { /* leave the directory */
			depth -= depth > 0;
			continue;
		}
		name_from(name, &data, &size);
		if (snprintf(p, sizeof(p), "%s/%s", cwd[depth], name) >= (int)sizeof(p))
			continue;
		switch (b & 7) {
		case 0:
		case 6:
			if (mkdir(p, 0700) == 0 && depth < DEPTH_MAX && strlen(p) < sizeof(cwd[0]))
				snprintf(cwd[++depth], sizeof(cwd[0]), "%s", p);
			break;
		case 1:
			(void)put(p, marked);
			break;
		case 2:
		case 7:
			(void)!symlink(target(b >> 3), p);
			break;
		case 3:
			(void)!mkfifo(p, 0600);
			break;
		case 4: { /* a marked file past the scanner's and lint's caps, sparse: the size
			   * alone must refuse it, never a read */
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);

			if (fd >= 0) {
				(void)!write(fd, marked, strlen(marked));
				(void)!ftruncate(fd, (off_t)LINT_FILE_MAX + 1 + (b >> 3));
				close(fd);
			}
			break;
		}
		}
	}
}

/* Everything reconcile and lint do with a clone. */
static void exercise(void)
{
	struct marker_set set = MARKER_SET_INIT;
	struct lint_report lr = LINT_REPORT_INIT;
	struct lint_options lo = {NULL};
	struct error err = ERROR_INIT;
	struct buf data = BUF_INIT_MAX(16u << 20);

	if (markers_scan_tree(&set, root, NULL, &err) == 0) {
		for (size_t i = 0; i < set.len; i++) {
			const char *f = set.items[i].file;
			char p[1200];
			struct stat st;

			snprintf(p, sizeof(p), "%s/%s", root, f);
			FUZZ_CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
			FUZZ_CHECK(f[0] != '/' && strncmp(f, "../", 3) != 0 && !strstr(f, "/../"));
			if (safefile_read(&data, root, f, &err) == 0)
				(void)safefile_replace(root, f, "image: r.example/app:v2\n", 24,
				                       &err);
		}
	}
	markers_release(&set);
	(void)lint_scan_tree(&lr, &lo, root, &err);
	lint_report_release(&lr);
	buf_release(&data);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	make_outside();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char p[400];
	struct buf b = BUF_INIT_MAX(4096);

	build(data, size);
	drain();
	exercise();
	FUZZ_CHECK(drain() == 0); /* nothing outside was opened, read or written */
	snprintf(p, sizeof(p), "%s/sentinel.yaml", outside);
	FUZZ_CHECK(buf_read_file(&b, p) == 0 && strcmp(b.data, marked) == 0);
	buf_release(&b);
	drain(); /* our own check opened the sentinel */
	FUZZ_CHECK(nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0);
	drain();
	return 0;
}
