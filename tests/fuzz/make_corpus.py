#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/seed_*) from the
golden files (tests/golden/wire) and small hand-written cases, in each target's input
format (see the comment at the top of each fuzz_<target>.c). Deterministic; run it again
after the goldens change. Inputs the fuzzers found (crash_*, found_*) and seeds written by
hand (hand_*) are kept."""
import base64, json, os, struct, sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, '..', 'golden', 'wire')
CORPUS = os.path.join(HERE, 'corpus')
WIRE_KEY = '3f6b2c1e-9a4d-4e8b-b7c5-0d2e8f1a6c94'   # fuzz_wire.c's KEY
TYPES = ['status', 'stream', 'display_data', 'update_display_data', 'execute_result', 'error',
         'clear_output', 'execute_input', 'execute_reply', 'input_request', 'kernel_info_reply',
         'comm_msg']   # fuzz_kernel_msg.c's table
CHANNELS = {'iopub': 0, 'shell': 1, 'stdin': 2, 'control': 3}

def frame(data):
    if isinstance(data, str):
        data = data.encode()
    assert len(data) < 65536
    return struct.pack('>H', len(data)) + data

def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, 'seed_' + name), 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())

def clean():
    for target in os.listdir(CORPUS) if os.path.isdir(CORPUS) else []:
        for name in os.listdir(os.path.join(CORPUS, target)):
            if name.startswith('seed_'):
                os.remove(os.path.join(CORPUS, target, name))

def goldens():
    for case in sorted(os.listdir(GOLDEN)):
        path = os.path.join(GOLDEN, case, 'input')
        if os.path.isfile(path):
            with open(path) as f:
                inp = json.load(f)
            with open(os.path.join(GOLDEN, case, 'expected')) as f:
                exp = json.load(f)
            yield case, inp, exp

def kernel_message(channel, msg_type, content):
    text = content if isinstance(content, (str, bytes)) else json.dumps(content)
    if msg_type in TYPES:
        return bytes([CHANNELS[channel] | TYPES.index(msg_type) << 2]) + frame(text)
    return bytes([CHANNELS[channel] | len(TYPES) << 2]) + frame(msg_type) + frame(text)

def wire_and_kernel_seeds():
    contents = {}
    for case, inp, exp in goldens():
        same_key = inp.get('key') == WIRE_KEY
        if 'frames' in inp:
            frames = [base64.b64decode(f) for f in inp['frames']]
            flags = 0 if same_key or case.startswith('reject_') else 1
            write('wire', case, bytes([flags]) + b''.join(frame(f) for f in frames))
            if case.startswith('accept_'):
                write('wire', case + '_small', bytes([flags | 2]) + b''.join(frame(f) for f in frames))
                channel = 'iopub' if '_iopub_' in case else 'stdin' if '_stdin_' in case else 'shell'
                contents[case] = (channel, exp['msg_type'], frames[-1 - exp['buffers']])
        else:
            parts = [inp['header'], inp['parent_header'], inp['metadata'], inp['content']]
            write('wire', case, bytes([0 if same_key else 1]) + frame('<IDS|MSG>')
                  + frame(b'0' * 64) + b''.join(frame(p) for p in parts))
    # kernel_msg: each golden message alone, then whole cells.
    for case, (channel, msg_type, content) in contents.items():
        write('kernel_msg', case, bytes([2 | 8 << 2]) + kernel_message(channel, msg_type, content))
    cell = [contents[c] for c in ('accept_iopub_status_busy', 'accept_iopub_stream_stdout',
                                  'accept_iopub_stream_unicode', 'accept_iopub_display_data_png',
                                  'accept_iopub_execute_result', 'accept_iopub_update_display_data',
                                  'accept_iopub_error_traceback', 'accept_iopub_clear_output',
                                  'accept_shell_execute_reply_error', 'accept_iopub_status_idle')]
    write('kernel_msg', 'cell', bytes([2 | 63 << 2]) + b''.join(kernel_message(*m) for m in cell))
    write('kernel_msg', 'cell_small', bytes([3 << 2]) + b''.join(kernel_message(*m) for m in cell))
    stdin = contents['accept_stdin_input_request']
    write('kernel_msg', 'stdin_lines', bytes([1 | 2 | 20 << 2]) + frame('alice\r\nbob\n\nlast')
          + b''.join(kernel_message(*stdin) for _ in range(5)))
    write('kernel_msg', 'clear_wait', bytes([2 | 10 << 2])
          + kernel_message('iopub', 'stream', {'name': 'stdout', 'text': 'old\n'})
          + kernel_message('iopub', 'clear_output', {'wait': True})
          + kernel_message('iopub', 'stream', {'name': 'stderr', 'text': 'new\n'})
          + kernel_message('iopub', 'clear_output', {'wait': False}))
    write('kernel_msg', 'error_no_traceback', bytes([1 << 2])
          + kernel_message('iopub', 'error', {'ename': 'KeyError', 'evalue': "'x'", 'traceback': []})
          + kernel_message('iopub', 'error', {'traceback': ['\x1b[0;31mTrace\x1b[0m', '\x1b[', 7]})
          + kernel_message('shell', 'execute_reply', {'status': 'error', 'execution_count': 2 ** 40}))
    write('kernel_msg', 'odd_type', bytes([2 | 4 << 2])
          + kernel_message('iopub', 'stream\u00e9', {'name': 'stdout', 'text': 'x'})
          + kernel_message('control', 'stream', {'name': 'stdout', 'text': 'x'}))
    return contents

def display_seeds(contents):
    png = contents['accept_iopub_display_data_png'][2]
    result = contents['accept_iopub_execute_result'][2]
    def msg(kind, content):
        text = content if isinstance(content, bytes) else json.dumps(content).encode()
        return bytes([kind]) + frame(text)
    for flags in (0, 1, 2, 4, 8, 14):
        write('display', 'png_%d' % flags, bytes([flags]) + msg(0, png) + msg(0, png))
    many = {'image/svg+xml': ['<svg>', '</svg>'], 'text/html': '<b>x</b>',
            'application/pdf': base64.b64encode(b'%PDF-1.4\n').decode(),
            'application/json': {'a': [1, 2]}, 'image/jpeg': 'not base64!'}
    write('display', 'types', bytes([14]) + b''.join(
        msg(i % 3, {'data': {k: v}, 'metadata': {}, 'transient': {'display_id': 'd%d' % i}})
        for i, (k, v) in enumerate(many.items())) + msg(2, result))
    write('display', 'wrapped_base64', bytes([0]) + msg(0, {'data': {'image/png': 'aGVs\nbG8=\r\n'}}))

def text_seeds():
    def chunks(*parts):
        return b''.join(bytes([len(p)]) + p for p in parts)
    write('text', 'fits', bytes([64, 255, 16, 16]) + chunks(b'hello ', b'world\n'))
    write('text', 'ascii_over', bytes([8, 4, 3, 3]) + chunks(b'0123456789', b'abcdefghij', b'ABCDEF'))
    utf8 = 'h\u00e9llo w\u00f6rld \u20ac\u20ac\u20ac \U0001f600\U0001f600 end'.encode()
    write('text', 'utf8_over', bytes([9, 6, 5, 5]) + chunks(utf8[:7], utf8[7:19], utf8[19:]))
    write('text', 'utf8_byte_by_byte', bytes([16, 8, 7, 7]) + chunks(*[utf8[i:i + 1] for i in range(len(utf8))]))
    write('text', 'no_cut_cap', bytes([255, 8, 4, 4]) + chunks(utf8))
    write('text', 'invalid', bytes([5, 2, 2, 2]) + chunks(b'\xff\xfe\x80abc\xc3', b'\xa9\xe2\x82'))

def jsonrpc_seeds():
    def call(name, arguments, id=1):
        return json.dumps({'jsonrpc': '2.0', 'id': id, 'method': 'tools/call',
                           'params': {'name': name, 'arguments': arguments}})
    seeds = {
        'initialize': json.dumps({'jsonrpc': '2.0', 'id': 0, 'method': 'initialize', 'params': {
            'protocolVersion': '2025-06-18', 'capabilities': {}, 'clientInfo': {'name': 'c', 'version': '1'}}}),
        'initialized': '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        'cancelled': '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}',
        'response': '{"jsonrpc":"2.0","id":"s1","result":{"action":"accept"}}',
        'batch': '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
        'bad_id': '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        'nul': '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"python","code":"a\\u0000b"}}}',
        'duplicate': '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}',
        'execute': call('execute_code', {'language': 'py', 'code': 'print(1)', 'stdin': 'a\nb',
                                         'timeout': 5, 'session_id': 'sess_0123abcd'}),
        'execute_ms': call('execute_code', {'language': 'nodejs', 'code': '1', 'stdin_data': 'x',
                                            'stdin': 'x', 'timeout_ms': 1500}),
        'execute_files': call('execute_code', {'language': 'bash', 'code': 'cat a', 'files': {
            'a.txt': 'text', '/mnt/data/sub/b.bin': {'content_base64': 'AAEC'}, '../x': 'no'}}),
        'execute_bad': call('execute_code', {'language': 'cobol', 'code': 1, 'timeout': 301, 'extra': True}),
        'seed001': call('code_execution_sandbox.execute_code', {'language': 'python', 'code': '1', 'timeout_ms': 300000}),
        'run_python': call('run_python', {'code': 'x', 'session_id': 'a' * 129}),
        'send': call('send_to_session', {'code': 'x', 'session_id': 'sess_1', 'timeout': 1}),
        'upload': call('upload_file', {'filename': 'in/sales.csv', 'content_base64': 'YSxiCjEsMgo=',
                                       'overwrite': True, 'session_id': 'sess_1'}),
        'upload_bad': call('upload_file', {'filename': 'dir/.', 'content_base64': '', 'overwrite': 1}),
        'bare_arguments': json.dumps({'language': 'python', 'code': 'x', 'files': {'\u00e9t\u00e9.txt': 'y'}}),
    }
    for name, text in seeds.items():
        write('jsonrpc', name, text)

def http_seeds():
    token = 'tok-0123456789abcdef'
    get = 'GET /files/sess_fuzz/%s?token=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'
    seeds = {
        'download': get % ('sub%20dir/data.csv', token),
        'download_mnt': get % ('%2Fmnt%2Fdata%2Fpage.html', token),
        'head': 'HEAD /files/sess_fuzz/page.html?token=%s&x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' % token,
        'link': get % ('link.txt', token),
        'fifo': get % ('fifo.txt', token),
        'traversal': get % ('sub%20dir/..%2F..%2Fsecret', token),
        'nul': get % ('page.html%00.png', token),
        'bad_escape': get % ('page.html%zz', token + '%4'),
        'wrong_token': get % ('page.html', 'tok-0123456789abcdeX'),
        'no_token': 'GET /files/sess_fuzz/page.html HTTP/1.0\r\n\r\n',
        'post_files': 'POST /files/sess_fuzz/page.html?token=%s HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc' % token,
        'long_url': 'GET /files/' + 'a' * 4100 + ' HTTP/1.1\r\nHost: a\r\n\r\n',
        'mcp_post': 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nOrigin: http://127.0.0.1:8765\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: abc\r\nMCP-Protocol-Version: 2025-06-18\r\nAuthorization: Bearer x\r\nContent-Length: 40\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"ping"}',
        'mcp_later': 'POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nlater',
        'mcp_stream': 'POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nstream',
        'mcp_chunked': 'POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
        'mcp_too_large': 'POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 4096\r\n\r\n' + 'x' * 100,
        'mcp_chunked_large': 'POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n' + ('400\r\n' + 'y' * 1024 + '\r\n') * 3 + '0\r\n\r\n',
        'mcp_short_body': 'POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{}',
        'mcp_delete': 'DELETE /mcp HTTP/1.1\r\nHost: a\r\nMcp-Session-Id: x\r\n\r\n',
        'mcp_get': 'GET /mcp?x HTTP/1.1\r\nHost: a\r\n\r\n',
        'pipelined': (get % ('page.html', token)) + 'POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}' + (get % ('x', 'y')),
        'api_get': 'GET /api/sessions/x%20y?q=a%2Fb&q=2 HTTP/1.1\r\nHost: a\r\n\r\n',
        'api_exact': 'POST /api/kernels?q=%zz HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}',
        'api_exact_sub': 'GET /api/kernels/k1?q= HTTP/1.1\r\nHost: a\r\n\r\n',
        'api_bare': 'GET /api HTTP/1.1\r\nHost: a\r\n\r\n',
        'api_too_large': 'POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n' + 'z' * 65,
        'api_chunked_large': 'PUT /api/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n' + 'w' * 64 + '\r\n1\r\nw\r\n0\r\n\r\n',
        'mcp_sub': 'POST /mcp/x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}',
        'unknown': 'OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n',
        'garbage': 'GE\x00T /\xff HTTP/9.9\r\n\r\n',
        'admin_token': 'GET /admin/sessions HTTP/1.1\r\nHost: a\r\nAuthorization: bearer 0123456789abcdef0123456789abcdef\r\n\r\n',
        'admin_wrong': 'GET /admin/x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer 0123456789abcdef0123456789abcdeF\r\n\r\n',
        'admin_list': 'DELETE /admin/s HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer 0123456789abcdef,0123456789abcdef0123456789abcdef\r\n\r\n',
        'admin_none': 'GET /admin/ HTTP/1.1\r\nHost: a\r\nAuthorization: Basic YTpi\r\n\r\n',
    }
    for name, text in seeds.items():
        write('http', name, text.encode('latin-1'))

def workspace_seeds():
    seeds = ['a.txt', '/mnt/data/sub/b.csv', 'sub//./c', 'x/', '/mnt/data', '/mnt/data/', '/etc/passwd',
             '../a', 'a/../b', '.', '', 'caf\u00e9/\u20ac.txt', 'tab\there', 'del\x7f', 'a' * 256, ('b' * 200 + '/') * 6,
             '\xff\xfe', 'a/.', '/mnt/data/./x/.']
    for i, s in enumerate(seeds):
        data = s.encode('latin-1') if s == '\xff\xfe' else s.encode()
        write('workspace', '%02d' % i, data)
    write('workspace', 'nul', b'a\x00b')

def egress_seeds():
    policies = {
        'hosts': 'api.example.com, *.example.org:8443\n# a comment\n192.0.2.7 [2001:db8::7]:443\n',
        'mapped': '[::ffff:192.0.2.9] A.Example.COM:080 a.example.com',
        'refused_localhost': 'ok.example.com localhost',
        'refused_bad': 'a_b.example.com *.com a.*.example.com [fe80::1%eth0] http://x.example.com/',
        'ports': 'a.example.com:1 a.example.com:65535 a.example.com:65536 a.example.com:0',
        'long_label': 'a' * 63 + '.example.com ' + 'b' * 64 + '.example.com',
        'many': ' '.join('h%d.example.com' % i for i in range(70)),
        'decide': 'api.example.com *.example.org\0x.EXAMPLE.org.',
        'decide_v6': '[2001:db8::7]\0\x01\xbb[2001:DB8:0::7]',
    }
    for name, text in policies.items():
        write('egress_policy', name, text.encode('latin-1'))
    logs = {
        'allowed': 'cg1\t1795763400.953\t127.64.0.5\tGET\tapi.lab.test\t80\t200\t76\t270\t2\t198.18.11.2\tTCP_MISS\t-\n',
        'host': 'cg1\t1795763401.000\t127.64.0.5\tGET\tpypi.org\t80\t403\t68\t329\t0\t-\tTCP_DENIED\tCG_HOST_NOT_ALLOWED',
        'ipv6': 'cg1\t1795763401.010\t127.64.0.5\tGET\t%5Bfd63:676c:6162:b::2%5D\t80\t403\t94\t325\t0\t-\tTCP_DENIED\tCG_ADDRESS_NOT_ALLOWED\n',
        'tunnel': 'cg1\t1795763421.083\t127.64.0.5\tCONNECT\tapi.lab.test\t443\t200\t61\t39\t10011\t198.18.11.2\tTCP_TUNNEL\t-\n',
        'session': 'cg1\t1795763401.005\t127.64.0.6\tGET\tapi.lab.test\t80\t403\t76\t334\t0\t-\tTCP_DENIED\tCG_SESSION_NOT_ALLOWED\n',
        'no_proxy_line': 'cg1\t1795764893.149\t127.0.0.1\t-\t-\t-\t0\t76\t0\t0\t-\tNONE_NONE\t-\n',
        'invalid': 'cg1\t1795763463.379\t127.64.0.5\tGET\t-\t-\t400\t46\t4036\t0\t-\tNONE_NONE\t-\n',
        'v6_src': 'cg1\t1.000\t::1\tGET\tapi.lab.test\t80\t503\t45\t347\t30001\tfd63::2\tTCP_MISS\tERR_CONNECT_FAIL\n',
        'short': 'cg1\t1.000\t127.64.0.5\tGET',
        'extra_tab': 'cg1\t1.000\t127.64.0.5\tGET\th\t80\t200\t1\t1\t1\t-\tTCP_MISS\t-\t\n',
        'nul': 'cg1\t1.000\t127.64.0.5\tGET\ta\x00b\t80\t200\t1\t1\t1\t-\tTCP_MISS\t-',
        'long_host': 'cg1\t1.000\t127.64.0.5\tGET\t' + 'h' * 300 + '\t80\t200\t1\t1\t1\t-\tTCP_MISS\t-',
    }
    for name, text in logs.items():
        write('egress_log', name, text.encode('latin-1'))

def remote_seeds():
    # fuzz_remote_msg: a direction byte (bit 0: down), then frames.
    def msg(down, *frames):
        return bytes([1 if down else 0]) + b''.join(frame(f) for f in frames)
    write('remote_msg', 'hello', msg(False, 'HELLO', '1', 'cg-0a1b2c3d4e5f-00aa11bb22cc'))
    write('remote_msg', 'started', msg(False, 'STARTED', 'k1', '4242'))
    write('remote_msg', 'exited_signal', msg(False, 'EXITED', 'k1', '137'))
    write('remote_msg', 'failed', msg(False, 'FAILED', 'k1', 'exec: no such file: python3 \u00e9'))
    write('remote_msg', 'stats', msg(False, 'STATS', '1048576', '2097152', '-1'))
    write('remote_msg', 'from_shell', msg(False, 'FROM', 'k1', '0', b'\x00\x8bE\x11', b'<IDS|MSG>', 'a' * 64,
                                          '{"msg_type":"execute_reply"}', '{}', '{}', '{"status":"ok"}'))
    write('remote_msg', 'from_iopub', msg(False, 'FROM', 'k1', '1', '', 'kernel.stream', b'<IDS|MSG>', 'sig', '{}', '{}', '{}', '{}'))
    write('remote_msg', 'bye_up', msg(False, 'BYE', 'out of memory'))
    write('remote_msg', 'welcome', msg(True, 'WELCOME', '1'))
    write('remote_msg', 'exec', msg(True, 'EXEC', 'k2', json.dumps({'argv': ['python3', '-m', 'ipykernel_launcher', '-f', '/run/cellgate/ipc/kernel-k2.json'], 'env': ['PYTHONPATH=/opt/cellgate/site/python', 'HOME=/mnt/data'], 'cwd': '/mnt/data'})))
    write('remote_msg', 'exec_bad_spec', msg(True, 'EXEC', 'k2', '{"argv":[],"cwd":"x"}'))
    write('remote_msg', 'signal_all', msg(True, 'SIGNAL', '*', '9'))
    write('remote_msg', 'stats_ask', msg(True, 'STATS?'))
    write('remote_msg', 'put', msg(True, 'PUT', 'kernel-k2.json', '{"key":"secret","transport":"ipc"}'))
    write('remote_msg', 'to_control', msg(True, 'TO', 'k2', '3', 'peer', b'<IDS|MSG>', 'sig', '{"msg_type":"interrupt_request"}', '{}', '{}', '{}'))
    write('remote_msg', 'attach', msg(True, 'ATTACH', 'k2', 'kernel-k2.json'))
    write('remote_msg', 'out', msg(False, 'OUT', 'k3', '2', b'\x00error: \xff\n'))
    write('remote_msg', 'in', msg(True, 'IN', 'k3', 'hello\n'))
    write('remote_msg', 'in_eof', msg(True, 'IN', 'k3', ''))
    write('remote_msg', 'exec_stdio', msg(True, 'EXEC', 'k3', json.dumps({'argv': ['/bin/bash', '-c', 'cat'], 'env': [], 'cwd': '/mnt/data', 'stdin': True, 'output': True})))
    conn = {'transport': 'ipc', 'ip': '/run/cellgate/ipc/python', 'shell_port': 1, 'iopub_port': 2,
            'stdin_port': 3, 'control_port': 4, 'hb_port': 5, 'key': 'k', 'signature_scheme': 'hmac-sha256'}
    write('remote_msg', 'connection', bytes([2]) + json.dumps(conn).encode())
    write('remote_msg', 'connection_tcp', bytes([2]) + json.dumps(dict(conn, transport='tcp')).encode())
    write('remote_msg', 'connection_dots', bytes([2]) + json.dumps(dict(conn, ip='/x/..')).encode())
    write('remote_msg', 'wrong_way', msg(True, 'HELLO', '1', 'x'))

if __name__ == '__main__':
    clean()
    contents = wire_and_kernel_seeds()
    display_seeds(contents)
    text_seeds()
    jsonrpc_seeds()
    http_seeds()
    workspace_seeds()
    egress_seeds()
    remote_seeds()
    for target in sorted(os.listdir(CORPUS)):
        print('%s: %d files' % (target, len(os.listdir(os.path.join(CORPUS, target)))))
