/* JSON writing helpers over jansson. */
#include "imageguard/util/jsonout.h"

json_t *jsonout_str(const char *s)
{
	return s ? json_string(s) : json_null();
}

json_t *jsonout_line(const char *file, size_t line)
{
	return file ? json_integer((json_int_t)line) : json_null();
}
