/*  cg_tools_calc — calculate (seed 003): a math.js-style expression evaluated with SymPy by
    kernels/python/cellgate_calc.py in a one-shot sandbox, never on the host, and its
    result in seed 003's terms (expression, result, steps). */
#include "mcp/tools/cg_tools.h"
#include "base/cg_util.h"
#include "containers/cg_container.h"

#include <ctype.h>
#include <string.h>

//  The evaluator, as the sandbox sees it (the kernels directory is bound read-only there).
//  -I: no PYTHON* variables, user site or script directory, so nothing installed into
//  the sandbox's package layers can stand in for SymPy.
#define S_COMMAND "exec /usr/bin/python3 -I " CG_KERNELS_MOUNT "/python/cellgate_calc.py"

//  What an expression may hold besides ASCII letters and digits (the evaluator allows the
//  same): white space and math.js's operators.
#define S_PUNCTUATION " \t\r\n_+-*/^()[],.=<>!%"

//  The longest error code and message taken from the evaluator's answer.
#define S_CODE_MAX 32
#define S_MESSAGE_MAX 2000

//  The result of a refused or failed calculation: seed 003's {expression, result:
//  "Error: ..."} and the tools' {success, error, message}.
static json_t *
s_error (const char *expression, const char *error, const char *message)
{
    json_t *result = cg_tools_error_object (error, message, NULL);
    json_t *structured = json_object_get (result, "structuredContent");
    json_object_set_new (structured, "expression", json_string (expression ? expression : ""));
    json_object_set_new (structured, "result", json_sprintf ("Error: %s", message));
    return result;
}

char *
cg_tools_calc_refusal (const json_t *expression, const char **error)
{
    *error = "invalid_params";
    if (!json_is_string (expression))
        return cg_xstrdup ("'expression' is a required string, e.g. derivative(x^3 + 2x^2, x)");
    const char *text = json_string_value (expression);
    size_t len = json_string_length (expression), chars = 0;
    bool blank = true;
    for (size_t i = 0; i < len; i++) {
        chars += ((unsigned char)text[i] & 0xC0) != 0x80;
        blank = blank && isspace ((unsigned char)text[i]);
    }
    if (chars > CG_CALC_EXPRESSION_MAX)
        return cg_strdupf ("expression is %zu characters; at most " CG_STR (CG_CALC_EXPRESSION_MAX),
                           chars);
    if (blank)
        return cg_xstrdup ("expression is empty");
    *error = "invalid_expression";
    if (strstr (text, "__"))
        return cg_xstrdup ("'__' is not allowed: an expression is math, not Python");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '.' && !(i > 0 && isdigit ((unsigned char)text[i - 1]))
            && !(i + 1 < len && isdigit ((unsigned char)text[i + 1])))
            return cg_xstrdup ("'.' is allowed only in numbers (no attribute access)");
        if (!isalnum (c) && (c == '\0' || !strchr (S_PUNCTUATION, c)))
            return c >= 0x20 && c < 0x7F
                       ? cg_strdupf ("'%c' is not allowed in an expression; use letters, digits, "
                                     "spaces and %s",
                                     c, "+ - * / ^ ( ) [ ] , . = < > ! %")
                       : cg_xstrdup ("only ASCII letters, digits, spaces and math operators are "
                                     "allowed in an expression");
    }
    return NULL;
}

void
cg_tools_calculate (const cg_request_t *req, json_t *arguments)
{
    json_t *expression = json_object_get (arguments, "expression");
    const char *error = NULL;
    cleanup_free char *why = cg_tools_calc_refusal (expression, &error);
    if (why) {
        cg_request_result (req, s_error (json_string_value (expression), error, why));
        return;
    }
    zactor_t *oneshot = cg_registry_oneshot_start (cg_server_registry (req->server));
    if (!oneshot) {
        json_t *refusal = cg_tools_max_sessions (req, NULL, NULL);
        json_t *structured = json_object_get (refusal, "structuredContent");
        json_object_set (structured, "expression", expression);
        json_object_set_new (structured, "result",
                             json_sprintf ("Error: %s", json_string_value (json_object_get (
                                                            structured, "message"))));
        cg_request_result (req, refusal);
        return;
    }
    //  The expression goes to the evaluator as its standard input, never into the command.
    char execution_id[18] = "exec_";
    cg_random_hex (execution_id + 5, 6);
    json_t *request =
        json_pack ("{s:s, s:s, s:O, s:f, s:s, s:s}", "language", "bash", "code", S_COMMAND, "stdin",
                   expression, "timeout", (double)CG_CALC_TIMEOUT_S, "execution_id", execution_id,
                   "tool", req->tool->name);
    cg_call_t *call = cg_tools_dispatch (req, request, NULL, oneshot);
    call->context = json_pack ("{s:O}", "expression", expression);
    call->request = json_pack ("{s:s, s:O}", "code", S_COMMAND, "stdin", expression);
    cg_tools_begin (req->server, call);
    json_decref (request);
}

//  The evaluator's answer: the last line of TEXT (untrusted: the sandbox's output) as a
//  JSON object, or NULL.
static json_t *
s_answer (const char *text)
{
    size_t len = strlen (text);
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    size_t start = len;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    json_t *answer = json_loadb (text + start, len - start, JSON_REJECT_DUPLICATES, NULL);
    if (answer && !json_is_object (answer))
        json_decref (answer), answer = NULL;
    return answer;
}

//  True when TEXT is a plausible error code: 1 to S_CODE_MAX lower-case letters and '_'.
static bool
s_code (const char *text)
{
    size_t len = text ? strlen (text) : 0;
    if (len == 0 || len > S_CODE_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!islower ((unsigned char)text[i]) && text[i] != '_')
            return false;
    return true;
}

//  The tools/call result of the evaluator's ANSWER (borrowed) for EXPRESSION, or NULL when
//  it is not one.
static json_t *
s_answer_result (const char *expression, json_t *answer)
{
    const char *error = json_string_value (json_object_get (answer, "error"));
    const char *message = json_string_value (json_object_get (answer, "message"));
    if (error || message) {
        if (!s_code (error) || !message || strlen (message) > S_MESSAGE_MAX)
            return NULL;
        return s_error (expression, error, message);
    }
    json_t *value = json_object_get (answer, "result");
    json_t *steps = json_object_get (answer, "steps");
    if (!json_is_number (value) && !json_is_string (value))
        return NULL;
    size_t i;
    json_t *step;
    json_array_foreach (steps, i, step) if (!json_is_string (step)) return NULL;
    if (steps && !json_is_array (steps))
        return NULL;
    json_t *structured = json_pack ("{s:s, s:O}", "expression", expression, "result", value);
    if (steps && json_array_size (steps))
        json_object_set (structured, "steps", steps);
    cleanup_free char *text = json_is_string (value)
                                  ? cg_xstrdup (json_string_value (value))
                                  : json_dumps (value, JSON_ENCODE_ANY | JSON_REAL_PRECISION (15));
    return cg_tools_object_result (structured, text, false);
}

json_t *
cg_tools_calculate_finish (cg_server_t *server, cg_call_t *call, cg_registry_session_t *session,
                           const cg_outcome_t *outcome)
{
    (void)server;
    (void)session;
    const char *expression = json_string_value (json_object_get (call->context, "expression"));
    if (outcome->timed_out || outcome->end == CG_OUTCOME_TIMEOUT)
        return s_error (expression, "timeout",
                        "the calculation took longer than " CG_STR (
                            CG_CALC_TIMEOUT_S) " s; simplify the expression or split it up");
    json_t *answer = outcome->ran ? s_answer (outcome->out.text) : NULL;
    json_t *result = answer ? s_answer_result (expression, answer) : NULL;
    json_decref (answer);
    if (result)
        return result;
    cleanup_free char *message = NULL;
    if (!outcome->ran)
        message = cg_strdupf ("the calculator's sandbox did not start: %s",
                              outcome->message ? outcome->message : "unknown error");
    else {
        //  The end of what it printed on stderr (a Python traceback ends with its cause),
        //  from the start of a character.
        const char *tail =
            outcome->err.text + (outcome->err.len > 400 ? outcome->err.len - 400 : 0);
        while (((unsigned char)*tail & 0xC0) == 0x80)
            tail++;
        message = cg_strdupf ("the calculator gave no result (exit code %d)%s%s",
                              outcome->exit_code, *tail ? ": " : "", tail);
    }
    return s_error (expression, "calculation_failed", message);
}
