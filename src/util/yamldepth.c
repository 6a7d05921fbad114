/* Nesting-depth guard for untrusted YAML (see yamldepth.h for why). */
#include <string.h>
#include <yaml.h>

#include "imageguard/util/error.h"
#include "imageguard/util/yamldepth.h"

/* The slow case, flow nesting, needs an opening bracket per level: a file with fewer brackets
 * than the limit is safe without parsing, and most files have far fewer. */
static size_t flow_bound(const char *data, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += data[i] == '[' || data[i] == '{';
	return n;
}

int yamldepth_check(size_t *line_out, const char *data, size_t len, size_t max_depth)
{
	yaml_parser_t p;
	yaml_event_t e;
	size_t depth = 0;
	int rc = 0;

	*line_out = 0;
	if (flow_bound(data, len) <= max_depth)
		return 0;
	if (!yaml_parser_initialize(&p))
		return IG_EFAIL;
	yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
	for (;;) {
		yaml_event_type_t type;

		if (!yaml_parser_parse(&p, &e)) {
			rc = p.error == YAML_MEMORY_ERROR ? IG_EFAIL : 0;
			break;
		}
		type = e.type;
		if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
			if (++depth > max_depth) {
				*line_out = e.start_mark.line + 1;
				rc = IG_ETOOBIG;
			}
		} else if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) {
			depth--;
		}
		yaml_event_delete(&e);
		if (rc || type == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&p);
	return rc;
}
