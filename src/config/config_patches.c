/* Kustomize patches in a config directory: a file that a kustomization.yaml of the tree names
 * under patchesStrategicMerge or patches (path form) is a patch of some object, merged into it
 * by Flux's kustomize-controller, not an object; it is left out of the files read, with one
 * info line. */
#include <stdlib.h>
#include <string.h>

#include "config_private.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/strvec.h"

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Kustomize's three spellings of its file name. */
static bool is_kustomization(const char *path)
{
	const char *b = base_name(path);

	return !strcmp(b, "kustomization.yaml") || !strcmp(b, "kustomization.yml") ||
	       !strcmp(b, "Kustomization");
}

/* Appends one component to the path in b (root: 1 when it is absolute), "." dropped and ".."
 * taking the last one off. -1 when ".." climbs above the root. */
static int push_component(struct buf *b, size_t root, const char *s, size_t n)
{
	char *slash;

	if (n == 0 || (n == 1 && s[0] == '.'))
		return 0;
	if (n == 2 && s[0] == '.' && s[1] == '.') {
		if (b->len <= root)
			return -1;
		slash = strrchr(b->data, '/');
		b->len =
		    slash && (size_t)(slash - b->data) >= root ? (size_t)(slash - b->data) : root;
		b->data[b->len] = '\0';
		return 0;
	}
	return buf_printf(b, "%s%.*s", b->len > root ? "/" : "", (int)n, s);
}

static int push_components(struct buf *b, size_t root, const char *s, const char *end)
{
	while (s < end) {
		const char *e = memchr(s, '/', (size_t)(end - s));

		if (!e)
			e = end;
		if (push_component(b, root, s, (size_t)(e - s)) < 0)
			return -1;
		s = e + 1;
	}
	return 0;
}

/* The folder of file joined with rel, "." and ".." folded, into out: the same spelling for
 * "./c/a/../p.yaml" as for "c/p.yaml". Returns 0, or -1 (rel absolute or leaving the tree, or
 * out of memory). */
static int normalize(struct buf *out, const char *file, const char *rel)
{
	size_t root = file[0] == '/';
	const char *dir_end = base_name(file);

	buf_reset(out);
	if (rel[0] == '/' || buf_printf(out, "%s", root ? "/" : "") < 0)
		return -1;
	if (push_components(out, root, file, dir_end) < 0 ||
	    push_components(out, root, rel, rel + strlen(rel)) < 0)
		return -1;
	return out->data ? 0 : -1;
}

/* One pass over the files: their normalized names, and which are patches. */
struct scan {
	struct loader *L;
	const struct strvec *files;
	struct strvec norm;
	bool *skip;
};

/* rel (a patch path of kfile at line) names a file of the scan: mark it, with its info line. */
static void mark_patch(struct scan *sc, const char *kfile, size_t line, const char *field,
                       const char *rel)
{
	struct buf path = BUF_INIT;

	if (normalize(&path, kfile, rel) == 0)
		for (size_t i = 0; i < sc->files->len; i++)
			if (!sc->skip[i] && !strcmp(sc->norm.items[i], path.data) &&
			    strcmp(sc->files->items[i], kfile)) {
				sc->skip[i] = true;
				config_diag_info(sc->L, sc->files->items[i], 0,
				                 "a patch named by %s:%zu ('%s'), not an object "
				                 "(skipped)",
				                 kfile, line, field);
			}
	buf_release(&path);
}

/* The patch paths of one kustomization document: patchesStrategicMerge's file names (an
 * entry holding a newline is an inline patch) and patches' path fields. */
static void read_patches(struct scan *sc, struct doc *d, const yaml_node_t *root)
{
	const yaml_node_t *psm = config_yaml_lookup(d, root, "patchesStrategicMerge"),
	                  *patches = config_yaml_lookup(d, root, "patches");

	if (psm && psm->type == YAML_SEQUENCE_NODE)
		for (yaml_node_item_t *it = psm->data.sequence.items.start;
		     it < psm->data.sequence.items.top; it++) {
			const yaml_node_t *n = node(d, *it);

			if (n && n->type == YAML_SCALAR_NODE && !strchr(scalar(n), '\n'))
				mark_patch(sc, d->file, line_of(n), "patchesStrategicMerge",
				           scalar(n));
		}
	if (patches && patches->type == YAML_SEQUENCE_NODE)
		for (yaml_node_item_t *it = patches->data.sequence.items.start;
		     it < patches->data.sequence.items.top; it++) {
			const yaml_node_t *path = config_yaml_lookup(d, node(d, *it), "path");

			if (path && path->type == YAML_SCALAR_NODE)
				mark_patch(sc, d->file, line_of(path), "patches", scalar(path));
		}
}

/* The first document of kustomization file kfile, read for its patches. A file that does not
 * parse is left to the object reader, which reports it. */
static void read_kustomization(struct scan *sc, const char *kfile)
{
	struct buf data = BUF_INIT_MAX(CONFIG_MAX_FILE_BYTES);
	yaml_parser_t parser;
	yaml_document_t y;
	struct doc d = {sc->L, &y, kfile, NULL, false, {0}, NULL, 0};

	if (buf_read_file(&data, kfile) < 0 || !yaml_parser_initialize(&parser)) {
		buf_release(&data);
		return;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)(data.data ? data.data : ""),
	                             data.len);
	if (yaml_parser_load(&parser, &y)) {
		const yaml_node_t *root = yaml_document_get_root_node(&y);

		if (root && root->type == YAML_MAPPING_NODE)
			read_patches(sc, &d, root);
		yaml_document_delete(&y);
	}
	yaml_parser_delete(&parser);
	buf_release(&data);
}

static bool any_kustomization(const struct strvec *files)
{
	for (size_t i = 0; i < files->len; i++)
		if (is_kustomization(files->items[i]))
			return true;
	return false;
}

/* Every file's normalized name into sc->norm (a name that does not normalize stays as is). */
static int normalize_all(struct scan *sc)
{
	struct buf b = BUF_INIT;
	int rc = 0;

	for (size_t i = 0; i < sc->files->len && rc == 0; i++) {
		const char *f = sc->files->items[i];

		rc = strvec_push(&sc->norm, normalize(&b, f, base_name(f)) == 0 ? b.data : f);
	}
	buf_release(&b);
	return rc;
}

void config_patches_skip(struct loader *L, struct strvec *files)
{
	struct scan sc = {L, files, STRVEC_INIT, NULL};
	size_t w = 0;

	if (!any_kustomization(files))
		return;
	if (!(sc.skip = calloc(files->len, sizeof(*sc.skip))) || normalize_all(&sc) < 0) {
		L->oom = true;
		goto done;
	}
	for (size_t i = 0; i < files->len; i++)
		if (is_kustomization(files->items[i]))
			read_kustomization(&sc, files->items[i]);
	for (size_t r = 0; r < files->len; r++)
		if (sc.skip[r])
			free(files->items[r]);
		else
			files->items[w++] = files->items[r];
	files->len = w;
	files->items[w] = NULL;
done:
	strvec_release(&sc.norm);
	free(sc.skip);
}
