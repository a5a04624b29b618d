#!/usr/bin/env python3
"""A minimal MCP client for the package test (tests/package/deb.sh), run inside the installed
root with Debian's python3 alone: initialize, tools/list, then one execute_code per language
named. Over stdio it starts `cellgate mcp ARGS...`; over HTTP it posts to URL with the bearer
token in TOKEN_FILE. Prints one JSON object: {"server": serverInfo, "tools": [names],
"runs": {language: {"status", "stdout", "text"}}, "unauthorized": HTTP status without token}.
  mcp_client.py stdio LANGS -- cellgate mcp ...
  mcp_client.py http LANGS URL TOKEN_FILE"""
import json
import subprocess
import sys
import urllib.error
import urllib.request

CODE = {"python": "print(6 * 7)", "javascript": "console.log(6 * 7)", "bash": "echo $((6 * 7))"}


def initialize():
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "package-test", "version": "1"}}}


def run_calls(send, languages):
    out = {}
    init = send(initialize())
    out["server"] = init["result"]["serverInfo"]
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    out["tools"] = [t["name"] for t in tools["result"]["tools"]]
    out["runs"] = {}
    for n, language in enumerate(languages):
        reply = send({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                      "params": {"name": "execute_code",
                                 "arguments": {"language": language, "code": CODE[language]}}})
        result = reply.get("result", {})
        s = result.get("structuredContent") or {}
        text = " ".join(c.get("text", "") for c in result.get("content", []))
        out["runs"][language] = {"status": s.get("status"), "stdout": s.get("stdout"),
                                 "text": text[:2000] or json.dumps(reply)[:2000]}
    return out


def stdio(languages, argv):
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(message):
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if "id" not in message:
            return None
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("cellgate mcp ended before answering %s" % message["method"])
            reply = json.loads(line)
            if reply.get("id") == message["id"]:
                return reply

    try:
        return run_calls(send, languages)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def http(languages, url, token_file):
    token = open(token_file).read().strip()
    session = {}

    def post(message, headers):
        body = json.dumps(message).encode()
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", **headers})
        return urllib.request.urlopen(request, timeout=180)

    def send(message):
        headers = {"Authorization": "Bearer " + token, **session}
        with post(message, headers) as response:
            if "Mcp-Session-Id" in response.headers:
                session["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
            text = response.read().decode()
        if "id" not in message:
            return None
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            for line in text.splitlines():
                if line.startswith("data:"):
                    reply = json.loads(line[5:])
                    if reply.get("id") == message["id"]:
                        return reply
            raise SystemExit("no reply to %s in %s" % (message["method"], text[:500]))
        return json.loads(text)

    try:
        post(initialize(), {})
        unauthorized = 200
    except urllib.error.HTTPError as err:
        unauthorized = err.code
    out = run_calls(send, languages)
    out["unauthorized"] = unauthorized
    return out


def main():
    mode, languages = sys.argv[1], [l for l in sys.argv[2].split(",") if l]
    if mode == "stdio":
        result = stdio(languages, sys.argv[sys.argv.index("--") + 1:])
    else:
        result = http(languages, sys.argv[3], sys.argv[4])
    print(json.dumps(result))


main()
