"""cellgate_calc — the calculate tool's evaluator (seed 003): reads one math.js-style
expression on stdin, evaluates it with SymPy and prints one JSON line on stdout:
{"result": number or string, "steps": [...]?} or {"error": code, "message": text}.

It runs inside a one-shot sandbox (mcp/cg_tools_calc.c), never on the host. The expression
is untrusted data: it is never handed to eval as it stands. Its tokens are checked first
(names from an allow-list or plain variable names, no "__", no attribute access, no
keywords, no strings), and SymPy's parser then sees only a dictionary of what is allowed,
without Python's builtins.
"""

import io
import json
import keyword
import math
import sys
import tokenize

MAX_CHARS = 1000
MAX_RESULT_CHARS = 20000
MAX_EXACT_CHARS = 200

#  Operators the parser accepts; "." only inside numbers.
OPERATORS = {
    "+", "-", "*", "/", "**", "^", "(", ")", "[", "]", ",", "=", "==", "!=", "<", ">", "<=",
    ">=", "%", "!",
}

#  Characters outside these never reach the tokenizer (the server checks the same).
ALLOWED_CHARS = set(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\n_+-*/^()[],.=<>!%"
)


class CalcError(Exception):
    """A refusal or failure to report: CODE (seed 004-style, lower case) and a message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def tokens_of(text):
    try:
        return [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER,
                                  tokenize.INDENT, tokenize.DEDENT)]
    except (tokenize.TokenError, IndentationError, SyntaxError) as e:
        msg = str(e.args[0]) if e.args else str(e)
        if "EOF" in msg:
            msg = "unbalanced parentheses or brackets"
        raise CalcError("invalid_expression", msg)


def split_conversion(text):
    """Splits "5 cm + 2 inch to cm" at its last top-level "to" (or "in"): (left, target),
    target None when there is none."""
    depth = 0
    at = None
    lines = text.split("\n")
    for tok in tokens_of(text):
        if tok.type == tokenize.OP and tok.string in "([":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]":
            depth -= 1
        elif tok.type == tokenize.NAME and tok.string in ("to", "in") and depth == 0:
            at = tok
    if at is None:
        return text, None
    row, col = at.start
    offset = sum(len(line) + 1 for line in lines[: row - 1]) + col
    left, target = text[:offset].strip(), text[offset + len(at.string):].strip()
    if not left or not target:
        raise CalcError("invalid_expression", f"'{at.string}' needs a value before it and a unit after it")
    return left, target


def check_tokens(text, functions, names):
    """Refuses what is not a calculation. Returns the variable names, in order."""
    toks = tokens_of(text)
    variables = []
    for k, tok in enumerate(toks):
        s = tok.string
        if tok.type == tokenize.NAME:
            if "__" in s or s.startswith("_"):
                raise CalcError("invalid_expression", f"'{s}': names may not start with _ or contain __")
            if keyword.iskeyword(s) or s in ("to", "in"):
                raise CalcError("invalid_expression", f"'{s}' is not allowed here")
            call = k + 1 < len(toks) and toks[k + 1].string == "("
            if call and s not in functions and s not in names:
                raise CalcError("invalid_expression",
                                f"unknown function '{s}'; known: {', '.join(sorted(functions))}")
            if s not in functions and s not in names and s not in variables:
                variables.append(s)
        elif tok.type == tokenize.NUMBER:
            pass
        elif tok.type == tokenize.OP and s in OPERATORS:
            pass
        elif tok.type == tokenize.ERRORTOKEN and s == "!":
            pass
        elif tok.type == tokenize.ERRORTOKEN and s.isspace():
            pass
        elif s == ".":
            raise CalcError("invalid_expression", "attribute access ('.') is not allowed")
        else:
            raise CalcError("invalid_expression", f"'{s}' is not allowed in an expression")
    return variables


def equals_to_eq(tokens, local_dict, global_dict):
    """A SymPy parser transformation: "a = b" becomes Eq((a), (b)) wherever it stands — at
    the top level or as an argument (solve(x^2 = 4, x)); two "=" in one place are refused."""
    end = len(tokens)
    while end and tokens[end - 1][0] in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER):
        end -= 1

    def convert(ts):
        parts, seps, i = [[]], [], 0
        while i < len(ts):
            t = ts[i]
            if t[1] in ("(", "["):
                depth, j = 0, i
                while j < len(ts):
                    depth += 1 if ts[j][1] in ("(", "[") else -1 if ts[j][1] in (")", "]") else 0
                    if depth == 0:
                        break
                    j += 1
                if j == len(ts):
                    raise CalcError("invalid_expression", "unbalanced parentheses or brackets")
                parts[-1] += [t] + convert(ts[i + 1:j]) + [ts[j]]
                i = j + 1
                continue
            if t[1] == ",":
                seps.append(t)
                parts.append([])
            else:
                parts[-1].append(t)
            i += 1
        out = []
        for k, part in enumerate(parts):
            at = [n for n, t in enumerate(part) if t[0] == tokenize.OP and t[1] == "="]
            if len(at) > 1:
                raise CalcError("invalid_expression", "more than one '=' in an equation")
            if at:
                n = at[0]
                part = ([(tokenize.NAME, "Eq"), (tokenize.OP, "("), (tokenize.OP, "(")] + part[:n]
                        + [(tokenize.OP, ")"), (tokenize.OP, ","), (tokenize.OP, "(")]
                        + part[n + 1:] + [(tokenize.OP, ")"), (tokenize.OP, ")")])
            out += part + (seps[k:k + 1])
        return out

    return convert(tokens[:end]) + tokens[end:]


def build():
    """The functions, constants and units an expression may name, and the printer."""
    import sympy
    from sympy.printing.str import StrPrinter
    import sympy.physics.units as u

    def derivative(f, x=None, n=1):
        return sympy.diff(f, x, n) if x is not None else sympy.diff(f)

    def integrate(f, x=None, a=None, b=None):
        if x is None:
            return sympy.integrate(f)
        if a is None and b is None:
            return sympy.integrate(f, x)
        if a is None or b is None:
            raise CalcError("invalid_expression", "a definite integral is integrate(f, x, a, b)")
        return sympy.integrate(f, (x, a, b))

    def rounded(x, n=0):
        x = sympy.sympify(x)
        return x.round(n) if n else x.round()

    functions = {
        "derivative": derivative, "diff": derivative, "integrate": integrate, "solve": sympy.solve,
        "simplify": sympy.simplify, "expand": sympy.expand, "factor": sympy.factor,
        "limit": sympy.limit, "sqrt": sympy.sqrt, "cbrt": sympy.cbrt,
        "nthRoot": lambda x, n=2: sympy.root(x, n), "exp": sympy.exp, "log": sympy.log,
        "ln": sympy.log, "log10": lambda x: sympy.log(x, 10), "log2": lambda x: sympy.log(x, 2),
        "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "sec": sympy.sec,
        "csc": sympy.csc, "cot": sympy.cot, "asin": sympy.asin, "acos": sympy.acos,
        "atan": sympy.atan, "atan2": sympy.atan2, "sinh": sympy.sinh, "cosh": sympy.cosh,
        "tanh": sympy.tanh, "asinh": sympy.asinh, "acosh": sympy.acosh, "atanh": sympy.atanh,
        "abs": sympy.Abs, "sign": sympy.sign, "floor": sympy.floor, "ceil": sympy.ceiling,
        "round": rounded, "factorial": sympy.factorial, "gamma": sympy.gamma,
        "gcd": sympy.gcd, "lcm": sympy.lcm, "mod": sympy.Mod, "min": sympy.Min,
        "max": sympy.Max, "combinations": sympy.binomial, "binomial": sympy.binomial,
        "re": sympy.re, "im": sympy.im, "conj": sympy.conjugate, "arg": sympy.arg,
    }
    constants = {
        "pi": sympy.pi, "PI": sympy.pi, "e": sympy.E, "E": sympy.E, "i": sympy.I,
        "Infinity": sympy.oo, "inf": sympy.oo, "phi": sympy.GoldenRatio, "tau": 2 * sympy.pi,
    }
    units = {}
    for name in ("m cm mm km um nm inch ft foot yd yard mi mile g kg mg gram pound t tonne s "
                 "ms us ns minute h hour day year L l liter mL ml J W N Pa kPa bar atm psi Hz "
                 "V A ohm K kelvin mol eV deg degree rad C meter second").split():
        units[name] = getattr(u, name)

    class MathJsPrinter(StrPrinter):
        """SymPy's str, in math.js notation: ^ for powers, 3x^2 for a coefficient."""

        def _print_Pow(self, expr, rational=False):
            return super()._print_Pow(expr, rational).replace("**", "^")

        def _print_Mul(self, expr):
            c, rest = expr.as_coeff_Mul()
            if (c.is_Integer or c.is_Float) and c not in (1, -1) and not rest.is_Number:
                cs = self._print(c)
                if rest.is_Add:
                    return cs + "(" + self._print(rest) + ")"
                rs = self._print(rest)
                if rest.atoms(u.Quantity):
                    return cs + " " + rs
                if rs[:1].isalpha() or rs[:1] == "(":
                    return cs + rs
            return super()._print_Mul(expr)

        def _print_Float(self, expr):
            return "%.15g" % float(expr)

        def _print_ImaginaryUnit(self, expr):
            return "i"

        def _print_Exp1(self, expr):
            return "e"

        def _print_Pi(self, expr):
            return "pi"

        def _print_GoldenRatio(self, expr):
            return "phi"

        def _print_Infinity(self, expr):
            return "Infinity"

        def _print_NegativeInfinity(self, expr):
            return "-Infinity"

        def _print_ComplexInfinity(self, expr):
            return "ComplexInfinity"

        def _print_NaN(self, expr):
            return "NaN"

        def _print_Abs(self, expr):
            return "abs(" + self._print(expr.args[0]) + ")"

        def _print_ceiling(self, expr):
            return "ceil(" + self._print(expr.args[0]) + ")"

        def _print_BooleanTrue(self, expr):
            return "true"

        def _print_BooleanFalse(self, expr):
            return "false"

        def _print_Equality(self, expr):
            return self._print(expr.lhs) + " = " + self._print(expr.rhs)

        def _print_Quantity(self, expr):
            return str(expr.abbrev)

        def _print_Derivative(self, expr):
            f, *xs = expr.args
            return "derivative(" + ", ".join([self._print(f)] + [self._print(x[0]) for x in xs]) + ")"

        def _print_Integral(self, expr):
            f = expr.function
            limits = []
            for lim in expr.limits:
                limits.extend(self._print(v) for v in lim)
            return "integrate(" + ", ".join([self._print(f)] + limits) + ")"

    return sympy, functions, constants, units, MathJsPrinter(), u


def evaluate(expression):
    if len(expression) > MAX_CHARS:
        raise CalcError("invalid_params",
                        f"expression is {len(expression)} characters; at most {MAX_CHARS}")
    if not expression.strip():
        raise CalcError("invalid_params", "expression is empty")
    bad = sorted(set(c for c in expression if c not in ALLOWED_CHARS))
    if bad:
        raise CalcError("invalid_expression",
                        "characters not allowed in an expression: " + " ".join(repr(c) for c in bad))
    sympy, functions, constants, units, printer, u = build()
    from sympy.parsing.sympy_parser import (auto_number, convert_xor, factorial_notation,
                                            implicit_multiplication, parse_expr)

    left, target = split_conversion(expression)
    known = dict(constants)
    variables = check_tokens(left, functions, known)
    if target is not None:
        bad_target = [v for v in check_tokens(target, {}, {}) if v not in units]
        not_units = [v for v in variables if v not in units]
        if bad_target or not_units:
            raise CalcError("invalid_expression",
                            f"not a unit: {', '.join(bad_target + not_units)}; units: "
                            + ", ".join(sorted(units)))
    #  Unit names are units in a conversion, or beside a number with no other names
    #  (5 cm + 2 inch); elsewhere they are variables (m*g*h, solve(m*a = F, a)).
    units_mode = target is not None or (
        variables and all(v in units for v in variables) and any(c.isdigit() for c in left))
    local = {**functions, **known}
    if units_mode:
        local.update(units)
    else:
        local.update((v, sympy.Symbol(v)) for v in variables)
    #  What SymPy's generated code may name: our dictionary, and no builtins.
    global_dict = {"__builtins__": {}, "Integer": sympy.Integer, "Float": sympy.Float,
                   "Rational": sympy.Rational, "Symbol": sympy.Symbol,
                   "factorial": sympy.factorial, "Eq": sympy.Eq}
    reserved = [v for v in variables if v in global_dict]
    if reserved:
        raise CalcError("invalid_expression", f"'{reserved[0]}' is a reserved name")
    transformations = (equals_to_eq, auto_number, factorial_notation, convert_xor,
                       implicit_multiplication)

    def parse(text):
        try:
            return parse_expr(text, local_dict=local, global_dict=global_dict,
                              transformations=transformations)
        except CalcError:
            raise
        except SyntaxError as e:
            raise CalcError("invalid_expression", "syntax error: " + (e.msg or "invalid syntax"))
        except TypeError as e:
            raise CalcError("invalid_expression", str(e))
        except (ValueError, NotImplementedError, ZeroDivisionError, AttributeError,
                NameError) as e:
            raise CalcError("invalid_expression", str(e) or type(e).__name__)

    result = parse(left)
    if units_mode and isinstance(result, sympy.Basic) and result.atoms(u.Quantity):
        if target is not None:
            goal = parse(target)
        else:
            goal = local[variables[0]]
        converted = u.convert_to(result, goal)
        if target is not None or not converted.free_symbols:
            result = converted
        result = result.evalf(15)
    return result, printer, sympy, u


def number_or_string(result, steps, printer, sympy, u):
    if isinstance(result, (list, tuple, dict)):
        return printer.doprint(result)
    if isinstance(result, bool):
        return "true" if result else "false"
    if isinstance(result, sympy.Basic) and result.is_number and not result.atoms(u.Quantity):
        if result.is_Integer and abs(int(result)) < 2 ** 53:
            return int(result)
        value = result.evalf(17)
        if value.is_real or (value.is_number and sympy.im(value) == 0):
            f = float("%.15g" % float(sympy.re(value)))  # as the server sends it
            if math.isfinite(f):
                if not result.is_Float:
                    exact = printer.doprint(result)
                    if len(exact) <= MAX_EXACT_CHARS and exact != repr(f):
                        steps.append("exact: " + exact)
                return f
    return printer.doprint(result)


def main():
    expression = sys.stdin.read()
    try:
        result, printer, sympy, u = evaluate(expression)
        steps = []
        value = number_or_string(result, steps, printer, sympy, u)
        if isinstance(value, str) and len(value) > MAX_RESULT_CHARS:
            raise CalcError("result_too_large",
                            f"the result has {len(value)} characters; at most {MAX_RESULT_CHARS}")
        out = {"result": value}
        if steps:
            out["steps"] = steps
        reply(out)
    except CalcError as e:
        reply({"error": e.code, "message": str(e)})
    except RecursionError:
        reply({"error": "invalid_expression", "message": "the expression is nested too deeply"})
    except (TypeError, ValueError, NotImplementedError, ZeroDivisionError, AttributeError,
            KeyError, IndexError) as e:
        reply({"error": "invalid_expression", "message": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
