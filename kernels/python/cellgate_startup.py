# cellgate: run by ipykernel at start (--IPKernelApp.exec_files), in the sandbox.
#
# ipykernel sends what a cell prints once per flush interval (0.2 s) as one message, so a
# fast print loop becomes messages of tens or hundreds of MB, past what the server accepts
# from a kernel (--max-message-mb). Flushing once a megabyte is buffered keeps each stream
# message small and the output whole.


def _cellgate_bound_stream_messages():
    import ipykernel.iostream as iostream

    limit = 1 << 20
    write = iostream.OutStream.write

    def bounded_write(self, string):
        written = write(self, string)
        if self.pub_thread is not None and self._buffer.tell() >= limit:
            self.pub_thread.schedule(self._flush)
        return written

    iostream.OutStream.write = bounded_write


_cellgate_bound_stream_messages()
del _cellgate_bound_stream_messages
