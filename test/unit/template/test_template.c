/* The Go text/template engine and Sprig functions, table-driven: each case is a template, its
 * data (JSON: objects become map[string]interface {}) and the exact output Go produces, or a
 * fragment of the error. The expected outputs are worked out from the semantics documented
 * in golang/go's text/template (doc.go: trimming, variables, range over maps in key order,
 * else if, and/or short-circuit, break/continue) and fmt (verbs, flags, %!verb complaints),
 * and from Masterminds/sprig v3's function definitions (functions.go, commit
 * 003591cac3d259354bbdb26174d5d921dd743f52: argument order, int64 results, nil handling). */
#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "imageguard/template/template.h"
#include "imageguard/template/tval.h"
#include "imageguard/util/buf.h"
#include "imageguard/util/error.h"

static const struct tval *from_json(struct tarena *a, const json_t *j)
{
	struct tval *v;
	const char *k;
	json_t *e;
	size_t i;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		v = tval_map(a, NULL, TV_NIL);
		json_object_foreach((json_t *)j, k, e)
		    tval_map_set(a, v, tval_cstring(a, k), from_json(a, e));
		return v;
	case JSON_ARRAY:
		v = tval_list(a, json_array_size(j), NULL, TV_NIL);
		json_array_foreach(j, i, e) tval_list_push(a, v, from_json(a, e));
		return v;
	case JSON_STRING:
		return tval_string(a, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
		return tval_int(a, json_integer_value(j), "int");
	case JSON_REAL:
		return tval_float(a, json_real_value(j));
	case JSON_TRUE:
		return tval_bool(true);
	case JSON_FALSE:
		return tval_bool(false);
	default:
		return tval_nil();
	}
}

#define D                                                                                          \
	"{\"s\": \"hello\", \"n\": 3, \"f\": 1.5, \"t\": true, \"z\": 0, \"e\": \"\", \"l\": [1, " \
	"2, 3], "                                                                                  \
	"\"sl\": [\"b\", \"a\", \"c\"], \"m\": {\"b\": 2, \"a\": 1, \"c\": 3}, \"em\": {}, "       \
	"\"el\": [], "                                                                             \
	"\"nested\": {\"x\": {\"y\": \"deep\"}}, \"nil\": null}"

static const struct {
	const char *tmpl;
	const char *data; /* JSON, NULL: D */
	int rc;
	const char *out; /* output, or a fragment of the error */
} cases[] = {
    /* text, actions, trimming, comments */
    {"plain text", NULL, 0, "plain text"},
    {"{{.s}}", NULL, 0, "hello"},
    {"a {{- \" b \" -}} c", NULL, 0, "a b c"},
    {"x  {{- 3 }}  {{- 4 -}}  y", NULL, 0, "x34y"},
    {"{{- /* comment */ -}} \n x", NULL, 0, "x"},
    {"a{{/* c */}}b", NULL, 0, "ab"},
    {"{{-3}}", NULL, 0, "-3"},
    {"{{ . }}", "\"dot\"", 0, "dot"},
    {"{{.nested.x.y}}", NULL, 0, "deep"},
    {"{{.missing}}", NULL, 0, "<no value>"},
    {"{{.missing.deeper}}", NULL, 0, "<no value>"},
    {"{{.s.x}}", NULL, IG_EINVALID, "can't evaluate field x in type string"},
    {"{{.nil}}", NULL, 0, "<no value>"},
    {"{{.l}} {{.m}} {{.em}} {{.el}}", NULL, 0, "[1 2 3] map[a:1 b:2 c:3] map[] []"},
    {"{{.f}} {{.t}} {{.z}}", NULL, 0, "1.5 true 0"},
    /* literals */
    {"{{1}} {{-2}} {{0x10}} {{0o17}} {{017}} {{0b101}} {{1_000}} {{'a'}} {{1.5}} {{1e3}}", NULL, 0,
     "1 -2 16 15 15 5 1000 97 1.5 1000"},
    {"{{\"a\\tb\\u00e9\\x41\"}} {{`raw\\n`}} {{true}} {{false}}", NULL, 0,
     "a\tb\xc3\xa9"
     "A raw\\n true false"},
    {"{{1e6}} {{0.000001}} {{1e-5}} {{123456789.0}}", NULL, 0, "1e+06 1e-06 1e-05 1.23456789e+08"},
    /* variables */
    {"{{$x := 1}}{{$x}}{{$x = 2}}{{$x}}", NULL, 0, "12"},
    {"{{$}}", "\"root\"", 0, "root"},
    {"{{with $x := .s}}{{$x}}{{end}}", NULL, 0, "hello"},
    {"{{range $i, $e := .sl}}{{$i}}={{$e}} {{end}}", NULL, 0, "0=b 1=a 2=c "},
    {"{{range $e := .sl}}{{$e}}{{end}}", NULL, 0, "bac"},
    {"{{range .l}}{{$.s}}{{end}}", NULL, 0, "hellohellohello"},
    {"{{$x := 0}}{{range .l}}{{$x = .}}{{end}}{{$x}}", NULL, 0, "3"},
    {"{{$y}}", NULL, IG_EINVALID, "undefined variable \"$y\""},
    {"{{if true}}{{$z := 1}}{{end}}{{$z}}", NULL, IG_EINVALID, "undefined variable \"$z\""},
    /* range */
    {"{{range .m}}{{.}}{{end}}", NULL, 0, "123"},
    {"{{range $k, $v := .m}}{{$k}}{{$v}}{{end}}", NULL, 0, "a1b2c3"},
    {"{{range .el}}x{{else}}empty{{end}}", NULL, 0, "empty"},
    {"{{range .em}}x{{else}}empty{{end}}", NULL, 0, "empty"},
    {"{{range .nil}}x{{else}}nil{{end}}", NULL, 0, "nil"},
    {"{{range 3}}{{.}}{{end}}", NULL, 0, "012"},
    {"{{range .l}}{{if eq . 2}}{{break}}{{end}}{{.}}{{end}}", NULL, 0, "1"},
    {"{{range .l}}{{if eq . 2}}{{continue}}{{end}}{{.}}{{end}}", NULL, 0, "13"},
    {"{{range .s}}{{end}}", NULL, IG_EINVALID, "range can't iterate over string"},
    {"{{break}}", NULL, IG_EINVALID, "{{break}} outside {{range}}"},
    /* if / else if / with */
    {"{{if .t}}yes{{else}}no{{end}}", NULL, 0, "yes"},
    {"{{if .z}}a{{else if .e}}b{{else if .s}}c{{else}}d{{end}}", NULL, 0, "c"},
    {"{{if .el}}a{{else}}b{{end}}{{if .em}}a{{else}}b{{end}}{{if .nil}}a{{else}}b{{end}}", NULL, 0,
     "bbb"},
    {"{{with .s}}{{.}}{{else}}none{{end}} {{with .e}}x{{else}}none{{end}}", NULL, 0, "hello none"},
    {"{{with .z}}x{{else with .n}}{{.}}{{end}}", NULL, 0, "3"},
    {"{{if}}x{{end}}", NULL, IG_EINVALID, "missing value for command"},
    {"{{if .t}}x", NULL, IG_EINVALID, "unexpected EOF"},
    {"{{end}}", NULL, IG_EINVALID, "unexpected {{end}}"},
    {"{{.s", NULL, IG_EINVALID, "unclosed action"},
    /* pipelines and parentheses */
    {"{{.s | printf \"%s!\"}}", NULL, 0, "hello!"},
    {"{{\"x\" | printf \"%s%s\" \"y\"}}", NULL, 0, "yx"},
    {"{{(printf \"%d\" 3) | len}}", NULL, 0, "1"},
    {"{{(.nested.x).y}}", NULL, 0, "deep"},
    {"{{.s | \"lit\"}}", NULL, IG_EINVALID, "non executable command in pipeline stage 2"},
    {"{{.s 1}}", NULL, IG_EINVALID, "is not a method but has arguments"},
    {"{{nil}}", NULL, IG_EINVALID, "nil is not a command"},
    {"{{3 4}}", NULL, IG_EINVALID, "can't give argument to non-function"},
    /* define / template / block */
    {"{{define \"T\"}}[{{.}}]{{end}}{{template \"T\" .s}}{{template \"T\" 1}}", NULL, 0,
     "[hello][1]"},
    {"{{block \"B\" .n}}<{{.}}>{{end}}", NULL, 0, "<3>"},
    {"{{template \"none\"}}", NULL, IG_EINVALID, "no such template \"none\""},
    {"{{define \"T\"}}a{{end}}{{define \"T\"}}b{{end}}", NULL, IG_EINVALID,
     "multiple definition of template \"T\""},
    {"{{define \"T\"}} {{end}}{{define \"T\"}}b{{end}}{{template \"T\"}}", NULL, 0, "b"},
    {"{{define \"R\"}}{{template \"R\"}}{{end}}{{template \"R\"}}", NULL, IG_ETOOBIG,
     "exceeded maximum template depth"},
    /* builtins */
    {"{{and 1 0 2}} {{and 1 2}} {{or 0 \"\" 5}} {{or 0 \"\"}} {{not 0}}", NULL, 0, "0 2 5  true"},
    {"{{or .s (index .el 5)}}", NULL, 0, "hello"},
    {"{{len .s}} {{len .l}} {{len .m}}", NULL, 0, "5 3 3"},
    {"{{len 3}}", NULL, IG_EINVALID, "len of type int"},
    {"{{index .l 1}} {{index .m \"b\"}} {{index .nested \"x\" \"y\"}} {{index .s 0}}", NULL, 0,
     "2 2 deep 104"},
    {"{{index .m \"q\"}}", NULL, 0, "<no value>"},
    {"{{index .l 5}}", NULL, IG_EINVALID, "index out of range: 5"},
    {"{{print 1 2 \"a\" 3 \"b\" \"c\"}}|{{println 1 \"a\"}}|", NULL, 0, "1 2a3bc|1 a\n|"},
    {"{{eq 1 1}} {{eq .s \"hello\"}} {{eq 1 2 3 1}} {{ne 1 2}} {{lt 1 2}} {{le 2 2}} {{gt \"b\" "
     "\"a\"}} {{ge 1 2}}",
     NULL, 0, "true true true true true true true false"},
    {"{{eq .missing \"x\"}}", NULL, 0, "false"},
    {"{{eq 1 \"1\"}}", NULL, IG_EINVALID, "incompatible types for comparison"},
    {"{{lt true false}}", NULL, IG_EINVALID, "invalid type for comparison"},
    {"{{eq .l .l}}", NULL, IG_EINVALID, "non-comparable type"},
    {"{{html \"<a href='x'>&\\\"\"}}", NULL, 0, "&lt;a href=&#39;x&#39;&gt;&amp;&#34;"},
    {"{{js \"it's <b>\\\"=\\\\\"}}", NULL, 0, "it\\'s \\u003Cb\\u003E\\\"\\u003D\\\\"},
    {"{{js \"\\u2028é\\x01\"}}", NULL, 0, "\\u2028é\\u0001"},
    {"{{urlquery \"a b&c=d/é\"}}", NULL, 0, "a+b%26c%3Dd%2F%C3%A9"},
    {"{{call .s}}", NULL, IG_EINVALID, "non-function of type string"},
    {"{{nope}}", NULL, IG_EINVALID, "function \"nope\" not defined"},
    /* printf verbs */
    {"{{printf \"%d %5d %-5d| %05d %+d %x %X %o %b %c %q %U\" 42 42 42 -42 42 255 255 8 5 65 65 "
     "65}}",
     NULL, 0, "42    42 42   | -0042 +42 ff FF 10 101 A 'A' U+0041"},
    {"{{printf \"%s|%10s|%-10s|%.2s|%q|%x|% x\" \"héllo\" \"hi\" \"hi\" \"héllo\" \"a\\\"b\\n\" "
     "\"hi\" \"hi\"}}",
     NULL, 0, "héllo|        hi|hi        |hé|\"a\\\"b\\n\"|6869|68 69"},
    {"{{printf \"%5.2f|%e|%g|%v|%.3g|%08.3f\" 3.14159 1234.5678 0.000012 2.5 3.14159 -3.14159}}",
     NULL, 0, " 3.14|1.234568e+03|1.2e-05|2.5|3.14|-003.142"},
    {"{{printf \"%t %v %d\" true .l .l}}", NULL, 0, "true [1 2 3] [1 2 3]"},
    {"{{printf \"%v %s %q\" .m .sl .sl}}", NULL, 0, "map[a:1 b:2 c:3] [b a c] [\"b\" \"a\" \"c\"]"},
    {"{{printf \"%d\" \"x\"}}|{{printf \"%s\"}}|{{printf \"%s\" 1 2}}|{{printf \"%!\"}}", NULL, 0,
     "%!d(string=x)|%!s(MISSING)|%!s(int=1)%!(EXTRA int=2)|%!!(MISSING)"},
    {"{{printf \"100%\"}}", NULL, 0, "100%!(NOVERB)"},
    {"{{printf \"%[2]s %[1]s %T %T %%\" \"a\" \"b\" 1 .l}}", NULL, 0, "b a string int %"},
    {"{{printf \"%T %T\" 1 .l}}", NULL, 0, "int []interface {}"},
    {"{{printf \"%*d|%-*d|\" 4 7 3 7}}", NULL, 0, "   7|7  |"},
    {"{{printf \"%v\" .nil}}|{{printf \"%s\" .nil}}", NULL, 0, "<nil>|%!s(<nil>)"},
    {"{{printf \"%#v\" 1}}", NULL, IG_EINVALID, "%#v (Go syntax) is not implemented"},
    /* Sprig: strings */
    {"{{trim \"  a b \\n\"}}|{{trimAll \"$\" \"$$5$\"}}|{{trimPrefix \"v\" \"v1.2\"}}|{{trimSuffix "
     "\".yaml\" \"a.yaml\"}}",
     NULL, 0, "a b|5|1.2|a"},
    {"{{upper \"héllo\"}} {{lower \"HÉLLO\"}} {{title \"hello wörld-x_y\"}}", NULL, 0,
     "HÉLLO héllo Hello Wörld-X_y"},
    {"{{repeat 3 \"ab\"}}|{{substr 1 3 \"hello\"}}|{{substr -1 2 \"hello\"}}|{{substr 2 99 "
     "\"hello\"}}|{{nospace \"a b\\tc\"}}",
     NULL, 0, "ababab|el|he|llo|abc"},
    {"{{trunc 3 \"hello\"}}|{{trunc -2 \"hello\"}}|{{trunc 9 \"hi\"}}|{{abbrev 5 \"hello "
     "world\"}}|{{abbrev 3 \"hello\"}}",
     NULL, 0, "hel|lo|hi|he...|hello"},
    {"{{contains \"ell\" .s}} {{hasPrefix \"he\" .s}} {{hasSuffix \"lo\" .s}} {{.s | contains "
     "\"x\"}}",
     NULL, 0, "true true true false"},
    {"{{quote \"a\" 1 .nil \"b\\\"\"}}|{{squote \"a\" 2}}|{{cat \"a\" 1 .nil \"b\"}}", NULL, 0,
     "\"a\" \"1\" \"b\\\"\"|'a' '2'|a 1 b"},
    {"{{indent 2 \"a\\nb\"}}|{{nindent 2 \"a\"}}|", NULL, 0, "  a\n  b|\n  a|"},
    {"{{replace \"o\" \"0\" \"foo boo\"}}|{{plural \"one\" \"many\" 1}} {{plural \"one\" \"many\" "
     "2}}",
     NULL, 0, "f00 b00|one many"},
    {"{{toString 5}} {{toString .l}} {{toString .s}}", NULL, 0, "5 [1 2 3] hello"},
    {"{{upper \"\\xffa\"}}|{{title \"\\xffa b\"}}", NULL, 0,
     "\xef\xbf\xbd"
     "A|\xef\xbf\xbd"
     "a B"},
    {"{{upper 5}}", NULL, IG_EINVALID, "wrong type for value; expected string; got int"},
    {"{{.missing | upper}}", NULL, IG_EINVALID, "invalid value; expected string"},
    {"{{repeat (add 1 2) \"x\"}}", NULL, IG_EINVALID, "expected int; got int64"},
    /* Sprig: lists */
    {"{{list 1 \"a\" 2}} {{first .l}} {{last .l}} {{rest .l}} {{initial .l}} {{first .el}}", NULL,
     0, "[1 a 2] 1 3 [2 3] [1 2] <no value>"},
    {"{{append .l 4}} {{prepend .l 0}} {{concat .l .sl}} {{reverse .l}}", NULL, 0,
     "[1 2 3 4] [0 1 2 3] [1 2 3 b a c] [3 2 1]"},
    {"{{uniq (list 1 2 1 \"a\" \"a\")}} {{without .l 2}} {{has 2 .l}} {{has 9 .l}} {{compact (list "
     "0 1 \"\" \"x\")}}",
     NULL, 0, "[1 2 a] [1 3] true false [1 x]"},
    {"{{sortAlpha .sl}} {{join \"-\" .sl}} {{join \",\" .l}} {{slice .l 1}} {{slice .l 1 2}}", NULL,
     0, "[a b c] b-a-c 1,2,3 [2 3] [2]"},
    {"{{splitList \",\" \"a,b,,c\"}} {{len (splitList \",\" \"\")}} {{(split \"/\" \"x/y\")._1}}",
     NULL, 0, "[a b  c] 1 y"},
    {"{{until 3}} {{untilStep 1 10 3}} {{chunk 2 .l}}", NULL, 0, "[0 1 2] [1 4 7] [[1 2] [3]]"},
    {"{{first .s}}", NULL, IG_EINVALID, "Cannot find first on type string"},
    /* Sprig: dicts */
    {"{{$d := dict \"b\" 2 \"a\" 1}}{{$d}} {{get $d \"a\"}} {{get $d \"q\"}}| {{hasKey $d \"b\"}}",
     NULL, 0, "map[a:1 b:2] 1 | true"},
    {"{{$d := dict \"a\" 1}}{{$_ := set $d \"c\" 3}}{{keys $d | sortAlpha}} {{values $d}} {{unset "
     "$d \"a\"}}",
     NULL, 0, "[a c] [1 3] map[c:3]"},
    {"{{pick (dict \"a\" 1 \"b\" 2) \"a\"}} {{omit (dict \"a\" 1 \"b\" 2) \"a\"}} {{dict \"k\"}}",
     NULL, 0, "map[a:1] map[b:2] map[k:]"},
    {"{{dig \"x\" \"y\" \"def\" .nested}} {{dig \"x\" \"q\" \"def\" .nested}}", NULL, 0,
     "deep def"},
    /* Sprig: defaults, conversions, math */
    {"{{default \"d\" .e}} {{default \"d\" .s}} {{.missing | default \"m\"}} {{empty .el}} {{empty "
     ".n}}",
     NULL, 0, "d hello m true false"},
    {"{{coalesce .e .z .s}} {{ternary \"y\" \"n\" true}} {{ternary \"y\" \"n\" false}}", NULL, 0,
     "hello y n"},
    {"{{atoi \"42\"}} {{atoi \"x\"}} {{int \"0x10\"}} {{int64 \"7.00\"}} {{float64 \"1.25\"}} "
     "{{int "
     "2.9}}",
     NULL, 0, "42 0 16 7 1.25 2"},
    {"{{add 1 2 3}} {{sub 5 7}} {{mul 2 3 4}} {{div 7 2}} {{mod 7 3}} {{max 1 9 3}} {{min 4 2 8}} "
     "{{add1 1}}",
     NULL, 0, "6 -2 24 3 1 9 2 2"},
    {"{{div 1 0}}", NULL, IG_EINVALID, "integer divide by zero"},
    {"{{floor 1.5}} {{ceil 1.2}} {{round 3.14159 2}}", NULL, 0, "1 2 3.14"},
    /* Sprig: regex (Go RE2 syntax) */
    {"{{regexMatch \"^[a-z]+$\" \"abc\"}} {{regexMatch \"(?=a)\" \"a\"}} {{regexFind \"[0-9]+\" "
     "\"ab12cd34\"}}",
     NULL, 0, "true false 12"},
    {"{{regexFindAll \"[0-9]\" \"a1b2c3\" -1}} {{regexFindAll \"[0-9]\" \"a1b2c3\" 2}} "
     "{{regexFindAll \"a*\" \"baaab\" -1}}",
     NULL, 0, "[1 2 3] [1 2] [ aaa ]"},
    {"{{regexReplaceAll \"a(x*)b\" \"-ab-axxb-\" \"${1}W\"}} {{regexReplaceAll \"a(x*)b\" "
     "\"-ab-axxb-\" \"$1W\"}} {{regexReplaceAllLiteral \"a(x*)b\" \"-ab-\" \"$1\"}}",
     NULL, 0, "-W-xxW- --- -$1-"},
    {"{{regexReplaceAll \"(?P<v>[0-9]+)\" \"v1.2\" \"<$v>\"}} {{regexReplaceAll \"x*\" \"abc\" "
     "\"-\"}}",
     NULL, 0, "v<1>.<2> -a-b-c-"},
    {"{{regexSplit \"z+\" \"pizza\" -1}} {{regexSplit \"z+\" \"pizza\" 1}} {{regexSplit \"\" "
     "\"abc\" -1}} {{regexQuoteMeta \"1.2*\"}}",
     NULL, 0, "[pi a] [pizza] [a b c] 1\\.2\\*"},
    {"{{regexFind \"(\" \"x\"}}", NULL, IG_EINVALID, "regexp: Compile"},
    {"{{regexFind \"(a)\\\\1\" \"aa\"}}", NULL, IG_EINVALID, "invalid or unsupported Perl syntax"},
    /* Sprig: encodings and hashes */
    {"{{b64enc \"hello\"}} {{b64dec \"aGVsbG8=\"}} {{b64dec \"aGVsbG8\"}} {{b64dec \"a!\"}}", NULL,
     0, "aGVsbG8= hello illegal base64 data at input byte 4 illegal base64 data at input byte 1"},
    {"{{sha256sum \"abc\"}} {{sha1sum \"abc\"}} {{adler32sum \"abc\"}}", NULL, 0,
     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad "
     "a9993e364706816aba3e25717850c26c9cd0d89d 38600999"},
    {"{{toJson .m}} {{toJson .sl}} {{toJson \"<a&b>\"}} {{toJson .nil}} {{toJson .f}} {{toJson "
     "1e21}}",
     NULL, 0,
     "{\"a\":1,\"b\":2,\"c\":3} [\"b\",\"a\",\"c\"] \"\\u003ca\\u0026b\\u003e\" null 1.5 1e+21"},
    {"{{toPrettyJson .nested}}", NULL, 0, "{\n  \"x\": {\n    \"y\": \"deep\"\n  }\n}"},
    {"{{base \"a/b.yaml\"}} {{dir \"a/b/c\"}} {{ext \"x.tar.gz\"}} {{clean \"a//b/../c/.\"}} "
     "{{isAbs \"/x\"}}",
     NULL, 0, "b.yaml a/b .gz a/c true"},
    {"{{typeOf .s}} {{typeOf .l}} {{kindOf .m}} {{kindIs \"int\" .n}} {{typeIs \"string\" .s}} "
     "{{deepEqual .l .l}}",
     NULL, 0, "string []interface {} map true true true"},
    {"{{fail \"stop here\"}}", NULL, IG_EINVALID, "error calling fail: stop here"},
    {"{{wrap 5 \"a b\"}}", NULL, IG_EINVALID,
     "function \"wrap\" (a Sprig function) is not implemented"},
    {"{{hello}}", NULL, 0, "Hello!"},
    /* caps */
    {"{{range 200000}}{{end}}", NULL, IG_ETOOBIG, "range iterations"},
    {"{{range until 100000}}{{range until 100000}}{{end}}{{end}}", NULL, IG_ETOOBIG,
     "range iterations"},
};

/* Cases of golang/go src/text/template/exec_test.go (commit
 * 00b6a902df40a833faea34985daaa36100bd7e09, execTests) that need no methods, channels, complex
 * numbers or typed maps, on tVal's fields as JSON. Error cases keep Go's verdict only. */
#define TVAL                                                                                       \
	"{\"X\": \"x\", \"I\": 17, \"U\": {\"V\": \"v\"}, \"SI\": [3, 4, 5], \"SIEmpty\": [], "    \
	"\"SB\": [true, false], \"MSI\": {\"one\": 1, \"two\": 2, \"three\": 3}, \"MSIone\": "     \
	"{\"one\": 1}, \"MSIEmpty\": {}, \"SMSI\": [{\"one\": 1, \"two\": 2}, {\"eleven\": 11, "   \
	"\"twelve\": 12}], \"PSI\": [21, 22, 23], \"True\": true, \"Empty0\": null, \"MXI\": {}}"

static const struct {
	const char *name, *tmpl, *out;
	bool ok;
} go_exec[] = {
    {"if true", "{{if true}}TRUE{{end}}", "TRUE", true},
    {"if false", "{{if false}}TRUE{{else}}FALSE{{end}}", "FALSE", true},
    {"if nil", "{{if nil}}TRUE{{end}}", "", false},
    {"if 1", "{{if 1}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO", true},
    {"if 0", "{{if 0}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", true},
    {"if 1.5", "{{if 1.5}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO", true},
    {"if emptystring", "{{if ``}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", true},
    {"if string", "{{if `notempty`}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", true},
    {"if emptyslice", "{{if .SIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", true},
    {"if slice", "{{if .SI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", true},
    {"if emptymap", "{{if .MSIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", true},
    {"if map", "{{if .MSI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", true},
    {"if map unset", "{{if .MXI.none}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", true},
    {"if map not unset", "{{if not .MXI.none}}ZERO{{else}}NON-ZERO{{end}}", "ZERO", true},
    {"if $x with $y int", "{{if $x := true}}{{with $y := .I}}{{$x}},{{$y}}{{end}}{{end}}",
     "true,17", true},
    {"if $x with $x int", "{{if $x := true}}{{with $x := .I}}{{$x}},{{end}}{{$x}}{{end}}",
     "17,true", true},
    {"if else if", "{{if false}}FALSE{{else if true}}TRUE{{end}}", "TRUE", true},
    {"if else chain", "{{if eq 1 3}}1{{else if eq 2 3}}2{{else if eq 3 3}}3{{end}}", "3", true},
    {"print", "{{print \"hello, print\"}}", "hello, print", true},
    {"print 123", "{{print 1 2 3}}", "1 2 3", true},
    {"print nil", "{{print nil}}", "<nil>", true},
    {"println", "{{println 1 2 3}}", "1 2 3\n", true},
    {"printf int", "{{printf \"%04x\" 127}}", "007f", true},
    {"printf float", "{{printf \"%g\" 3.5}}", "3.5", true},
    {"printf string", "{{printf \"%s\" \"hello\"}}", "hello", true},
    {"printf field", "{{printf \"%s\" .U.V}}", "v", true},
    {"printf dot", "{{with .I}}{{printf \"%d\" .}}{{end}}", "17", true},
    {"printf var", "{{with $x := .I}}{{printf \"%d\" $x}}{{end}}", "17", true},
    {"html", "{{html \"<script>alert(\\\"XSS\\\");</script>\"}}",
     "&lt;script&gt;alert(&#34;XSS&#34;);&lt;/script&gt;", true},
    {"html pipeline", "{{printf \"<script>alert(\\\"XSS\\\");</script>\" | html}}",
     "&lt;script&gt;alert(&#34;XSS&#34;);&lt;/script&gt;", true},
    {"js", "{{js \"It'd be nice.\"}}", "It\\'d be nice.", true},
    {"urlquery", "{{\"http://www.example.org/\"|urlquery}}", "http%3A%2F%2Fwww.example.org%2F",
     true},
    {"not", "{{not true}} {{not false}}", "false true", true},
    {"and", "{{and false 0}} {{and 1 0}} {{and 0 true}} {{and 1 1}}", "false 0 0 1", true},
    {"or", "{{or 0 0}} {{or 1 0}} {{or 0 true}} {{or 1 1}}", "0 1 true 1", true},
    {"boolean if", "{{if and true 1 `hi`}}TRUE{{else}}FALSE{{end}}", "TRUE", true},
    {"boolean if not", "{{if and true 1 `hi` | not}}TRUE{{else}}FALSE{{end}}", "FALSE", true},
    {"slice[0]", "{{index .SI 0}}", "3", true},
    {"slice[1]", "{{index .SI 1}}", "4", true},
    {"slice[HUGE]", "{{index .SI 10}}", "", false},
    {"slice[WRONG]", "{{index .SI `hello`}}", "", false},
    {"slice[nil]", "{{index .SI nil}}", "", false},
    {"map[one]", "{{index .MSI `one`}}", "1", true},
    {"map[two]", "{{index .MSI `two`}}", "2", true},
    {"map[nil]", "{{index .MSI nil}}", "", false},
    {"map[WRONG]", "{{index .MSI 10}}", "", false},
    {"double index", "{{index .SMSI 1 `eleven`}}", "11", true},
    {"nil[1]", "{{index nil 1}}", "", false},
    {"len slice", "{{len .SI}}", "3", true},
    {"len map", "{{len .MSI }}", "3", true},
    {"len of int", "{{len 3}}", "", false},
    {"len of nothing", "{{len .Empty0}}", "", false},
    {"with true", "{{with true}}{{.}}{{end}}", "true", true},
    {"with false", "{{with false}}{{.}}{{else}}FALSE{{end}}", "FALSE", true},
    {"with 1", "{{with 1}}{{.}}{{else}}ZERO{{end}}", "1", true},
    {"with 0", "{{with 0}}{{.}}{{else}}ZERO{{end}}", "ZERO", true},
    {"with 1.5", "{{with 1.5}}{{.}}{{else}}ZERO{{end}}", "1.5", true},
    {"with emptystring", "{{with ``}}{{.}}{{else}}EMPTY{{end}}", "EMPTY", true},
    {"with string", "{{with `notempty`}}{{.}}{{else}}EMPTY{{end}}", "notempty", true},
    {"with emptyslice", "{{with .SIEmpty}}{{.}}{{else}}EMPTY{{end}}", "EMPTY", true},
    {"with slice", "{{with .SI}}{{.}}{{else}}EMPTY{{end}}", "[3 4 5]", true},
    {"with emptymap", "{{with .MSIEmpty}}{{.}}{{else}}EMPTY{{end}}", "EMPTY", true},
    {"with map", "{{with .MSIone}}{{.}}{{else}}EMPTY{{end}}", "map[one:1]", true},
    {"with $x int", "{{with $x := .I}}{{$x}}{{end}}", "17", true},
    {"with $x struct.U.V", "{{with $x := $}}{{$x.U.V}}{{end}}", "v", true},
    {"with variable and action", "{{with $x := $}}{{$y := $.U.V}}{{$y}}{{end}}", "v", true},
    {"range []int", "{{range .SI}}-{{.}}-{{end}}", "-3--4--5-", true},
    {"range empty no else", "{{range .SIEmpty}}-{{.}}-{{end}}", "", true},
    {"range []int else", "{{range .SI}}-{{.}}-{{else}}EMPTY{{end}}", "-3--4--5-", true},
    {"range empty else", "{{range .SIEmpty}}-{{.}}-{{else}}EMPTY{{end}}", "EMPTY", true},
    {"range []bool", "{{range .SB}}-{{.}}-{{end}}", "-true--false-", true},
    {"range map", "{{range .MSI}}-{{.}}-{{end}}", "-1--3--2-", true},
    {"range empty map no else", "{{range .MSIEmpty}}-{{.}}-{{end}}", "", true},
    {"range map else", "{{range .MSI}}-{{.}}-{{else}}EMPTY{{end}}", "-1--3--2-", true},
    {"range empty map else", "{{range .MSIEmpty}}-{{.}}-{{else}}EMPTY{{end}}", "EMPTY", true},
    {"range empty nil", "{{range .Empty0}}-{{.}}-{{end}}", "", true},
    {"range $x SI", "{{range $x := .SI}}<{{$x}}>{{end}}", "<3><4><5>", true},
    {"range $x $y SI", "{{range $x, $y := .SI}}<{{$x}}={{$y}}>{{end}}", "<0=3><1=4><2=5>", true},
    {"range $x MSIone", "{{range $x := .MSIone}}<{{$x}}>{{end}}", "<1>", true},
    {"range $x $y MSIone", "{{range $x, $y := .MSIone}}<{{$x}}={{$y}}>{{end}}", "<one=1>", true},
    {"range $x PSI", "{{range $x := .PSI}}<{{$x}}>{{end}}", "<21><22><23>", true},
    {"declare in range", "{{range $x := .PSI}}<{{$foo:=$x}}{{$x}}>{{end}}", "<21><22><23>", true},
    {"or as if true", "{{or .SI \"slice is empty\"}}", "[3 4 5]", true},
    {"or as if false", "{{or .SIEmpty \"slice is empty\"}}", "slice is empty", true},
    {"parens in pipeline", "{{printf `%d %d %d` (1) (2 | add 3) (add 4 (add 5 6))}}", "1 5 15",
     true},
    {"parens: $ in paren", "{{($).X}}", "x", true},
    {"bug7a", "{{3 2}}", "", false},
    {"bug7b", "{{$x := 1}}{{$x 2}}", "", false},
    {"bug7c", "{{$x := 1}}{{3 | $x}}", "", false},
    {"bug12xe", "{{printf `%T` 0xef}}", "int", true},
    {"bug12XE", "{{printf `%T` 0XEE}}", "int", true},
    {"bug14a", "{{(nil).True}}", "", false},
    {"bug14b", "{{$x := nil}}{{$x.anything}}", "", false},
    {"bug14c", "{{$x := (1.0)}}{{$y := (\"hello\")}}{{$x.anything}}{{$y.true}}", "", false},
    {"bug16a", "{{true|printf}}", "", false},
    {"bug16b", "{{1|printf}}", "", false},
    {"bug16c", "{{1.1|printf}}", "", false},
    {"bug16d", "{{'x'|printf}}", "", false},
    {"bug16k", "{{\"aaa\"|printf }}", "aaa", true},
};

START_TEST(go_exec_tests)
{
	struct tarena arena = TARENA_INIT((size_t)16 << 20);
	struct buf out = BUF_INIT_MAX((size_t)1 << 20);
	struct error err = ERROR_INIT;
	struct template *t = NULL;
	json_t *j = json_loads(TVAL, 0, NULL);
	int rc;

	ck_assert_ptr_nonnull(j);
	rc = template_parse(&t, go_exec[_i].tmpl, "t", &err);
	if (rc == 0)
		rc = template_execute(&out, t, from_json(&arena, j), &arena, &err);
	ck_assert_msg((rc == 0) == go_exec[_i].ok, "%s: rc %d (%s) out [%s]", go_exec[_i].name, rc,
	              err.msg, out.data ? out.data : "");
	if (rc == 0)
		ck_assert_msg(!strcmp(out.data ? out.data : "", go_exec[_i].out),
		              "%s:\n got [%s]\nwant [%s]", go_exec[_i].name,
		              out.data ? out.data : "", go_exec[_i].out);
	template_free(t);
	json_decref(j);
	buf_release(&out);
	tarena_release(&arena);
}
END_TEST

START_TEST(render)
{
	struct tarena arena = TARENA_INIT((size_t)64 << 20);
	struct buf out = BUF_INIT_MAX((size_t)1 << 20);
	struct error err = ERROR_INIT;
	struct template *t = NULL;
	json_error_t jerr;
	json_t *j = json_loads(cases[_i].data ? cases[_i].data : D, JSON_DECODE_ANY, &jerr);
	int rc;

	ck_assert_msg(j != NULL, "case %d: bad JSON: %s", _i, jerr.text);
	rc = template_parse(&t, cases[_i].tmpl, "t", &err);
	if (rc == 0)
		rc = template_execute(&out, t, from_json(&arena, j), &arena, &err);
	ck_assert_msg(rc == cases[_i].rc, "case %d %s: rc %d (%s) out [%s]", _i, cases[_i].tmpl, rc,
	              err.msg, out.data ? out.data : "");
	if (rc == 0)
		ck_assert_msg(!strcmp(out.data ? out.data : "", cases[_i].out),
		              "case %d %s:\n got [%s]\nwant [%s]", _i, cases[_i].tmpl,
		              out.data ? out.data : "", cases[_i].out);
	else
		ck_assert_msg(strstr(err.msg, cases[_i].out), "case %d %s: %s", _i, cases[_i].tmpl,
		              err.msg);
	template_free(t);
	json_decref(j);
	buf_release(&out);
	tarena_release(&arena);
}
END_TEST

/* Errors carry the template's name and the action's line. */
START_TEST(error_lines)
{
	struct template *t = NULL;
	struct error err = ERROR_INIT;

	ck_assert_int_eq(template_parse(&t, "a\nb\n{{ bogus }}", "messageTemplate", &err),
	                 IG_EINVALID);
	ck_assert_str_eq(err.msg,
	                 "template 'messageTemplate': line 3: function \"bogus\" not defined");
	ck_assert_int_eq(template_parse(&t, "{{/* a\nb */}}\n{{ .x | }}", "m", &err), IG_EINVALID);
	ck_assert_msg(strstr(err.msg, "line 3:"), "%s", err.msg);
}
END_TEST

START_TEST(output_cap)
{
	struct tarena arena = TARENA_INIT((size_t)1 << 20);
	struct buf out = BUF_INIT_MAX(100);
	struct error err = ERROR_INIT;
	struct template *t = NULL;

	ck_assert_int_eq(template_parse(&t, "{{range 1000}}xxxx{{end}}", "t", &err), 0);
	ck_assert_int_eq(template_execute(&out, t, tval_nil(), &arena, &err), IG_ETOOBIG);
	template_free(t);
	ck_assert_int_eq(template_parse(&t, "{{repeat 100000000 \"x\"}}", "t", &err), 0);
	ck_assert_int_eq(template_execute(&out, t, tval_nil(), &arena, &err), IG_ETOOBIG);
	template_free(t);
	buf_release(&out);
	tarena_release(&arena);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("template");
	TCase *tc = tcase_create("template");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, render, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_loop_test(tc, go_exec_tests, 0, sizeof(go_exec) / sizeof(go_exec[0]));
	tcase_add_test(tc, error_lines);
	tcase_add_test(tc, output_cap);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
