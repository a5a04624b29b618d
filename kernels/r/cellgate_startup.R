# cellgate: the R kernel's start, in the sandbox. kernel.json runs
#   R --no-echo --no-save --no-restore --no-init-file --no-environ --file=<this> --args <connection file>
# which makes IRkernel's kernel itself (IRkernel:::Kernel, as IRkernel::main() does), adjusts
# its executor and runs it. IRkernel 1.3.2 ships no R sources: what is changed here was read
# from the installed functions (print(IRkernel:::Executor$methods("execute")) and the like).
#
# The server refuses any message from a kernel over --max-message-mb (told here as
# CELLGATE_MAX_MESSAGE_BYTES). IRkernel sends what a top-level expression printed as ONE
# stream message (a loop that prints 30 MB: one 30 MB message), so, for every request:
#
# - streams are cut into pieces of at most 1 MB (or an eighth of the limit);
# - a display (or value) whose data would not fit has its large parts saved as files in the
#   workspace's outputs/ (/mnt/data/outputs) and replaced by a short note naming them, as
#   Python does; an error's text is cut to fit.
#
# For an MCP tool's request, plots come as PNG only (text/plain beside it), 7 x 5 in at 100
# dpi (700 x 500 px, a ggplot scatter is about 10 KB), never PDF or SVG, and printed text has
# no ANSI colours (crayon.enabled FALSE, cli.num_colors 1: a tibble's print, rlang's errors);
# a notebook's gets IRkernel's own options (colours on).
#
# The rest is agent behaviour, for the requests the server sends for MCP tool calls only (the
# execute_request's metadata carries "cellgate_agent": true; IRkernel keeps the request as
# the executor's current_request and its metadata as a list). A notebook attached through the
# gateway never has the mark and sees the stock kernel: every change below starts with a test
# of that mark and otherwise runs IRkernel's own code (injected at the top of IRkernel's own
# functions, so that their frame counts, which cut IRkernel's tracebacks, stay as they are).
#
# - Errors read as Rscript prints them: "Error in f(): boom" (ename "Error in f()", evalue
#   "boom"), then "Traceback:" and the cell's own frames only (the call at top level and the
#   calls written in the cell, stop() among them, each with its line), without package
#   internals or IRkernel's and evaluate's machinery; no traceback when the cell's top-level
#   call is its only frame ("Error: bad" for a top-level stop('bad')). Warnings and messages
#   lose IRkernel's
#   "in eval(expr, envir, enclos)", its curly quotes and its extra blank line.
# - quit(status = n) / q() ends the cell, shows nothing, and the server reports exit code n
#   (a SystemExit error, as Python's sys.exit).
# - Values: every visible value but the cell's last is printed to stdout, as Rscript would;
#   the value of the cell's last expression, when visible, is its execute_result (the call's
#   returnValue; a plot IRkernel sends after the code ran comes before it), with its
#   text/plain and, for plain data (atomic vectors, lists of them with unique names, data frames of atomic
#   columns; at most 64 KB of JSON), an application/json form made by jsonlite (length-1
#   vectors as scalars, NA/NaN/Inf as null, data frames as rows). Markdown and LaTeX forms,
#   and HTML where there is JSON, are left out.
# - Standard input. The server writes a call's `stdin` to CELLGATE_STDIN_FILE
#   (/run/cellgate/stdin-r; kernel.json says "stdin": "file") before each cell and says
#   allow_stdin true. readline() returns its next line (the prompt is printed), and
#   readLines("stdin"), scan(file("stdin")), read.csv("stdin") and any other
#   file("stdin") read its remaining lines (base::file maps the name "stdin" to a file of
#   them). When the file is empty, a line is asked through Jupyter's stdin channel instead
#   (the server answers from the call's stdin, or asks the user for a task, or says end of
#   input). Without stdin (allow_stdin false) they fail with "readline() needs stdin: pass
#   `stdin` with the call"; readline() past the end fails with "readline(): no more lines in
#   stdin" (Rscript's readline() would return "" forever).

local({
    args <- commandArgs(trailingOnly = TRUE)
    connection <- if (length(args)) args[[1]] else ""
    # The connection file is in the ipc directory, which the sandbox may write: code in the
    # session may have put a link or a directory at its name. Exit at once, saying why,
    # instead of starting a kernel the server can never reach.
    info <- file.info(connection, extra_cols = FALSE)
    if (!nzchar(connection) || is.na(info$isdir) || info$isdir || nzchar(Sys.readlink(connection))) {
        message("cellgate: connection file ", connection, ": not a regular file")
        quit(save = "no", status = 1)
    }

    kernel <- IRkernel:::Kernel$new(connection_file = connection)
    ex <- kernel$executor
    self_env <- as.environment(ex)
    limit <- suppressWarnings(as.numeric(Sys.getenv("CELLGATE_MAX_MESSAGE_BYTES")))
    if (is.na(limit) || limit <= 0) limit <- 8 * 2^20
    piece <- min(2^20, limit %/% 8)
    workspace <- getwd()
    stdin_file <- Sys.getenv("CELLGATE_STDIN_FILE")
    state <- new.env(parent = emptyenv())
    state$agent <- FALSE
    state$pending <- NULL
    state$saved <- 0L

    # Options an MCP tool's request runs with and a notebook's request without (IRkernel's
    # own, as they were at start): switched at each request, unless a cell set one of the
    # set itself, which then keeps what it set.
    option_set <- function(agent_values) {
        option_names <- names(agent_values)
        current <- function() {
            now <- options()[option_names]
            names(now) <- option_names
            now
        }
        stock <- current()
        function(agent) {
            now <- current()
            if (agent && identical(now, stock)) options(agent_values)
            if (!agent && identical(now, agent_values)) options(stock)
        }
    }
    plot_options <- option_set(list(repr.plot.width = 7, repr.plot.height = 5, repr.plot.res = 100,
                                    jupyter.plot_mimetypes = c("text/plain", "image/png")))
    colour_options <- option_set(list(crayon.enabled = FALSE, cli.num_colors = 1L))

    # --- the message bound (every request) --------------------------------------------

    bytes <- function(value) {
        if (is.character(value)) sum(nchar(value, type = "bytes"))
        else if (is.raw(value)) (length(value) + 2) %/% 3 * 4 # sent as base64
        else length(value)
    }

    save_large <- function(data) {
        state$saved <- state$saved + 1L
        binary <- c("image/png" = "png", "image/jpeg" = "jpg", "image/gif" = "gif",
                    "image/webp" = "webp", "application/pdf" = "pdf")
        text <- c("image/svg+xml" = "svg", "text/html" = "html", "text/markdown" = "md",
                  "text/latex" = "tex", "application/json" = "json", "text/plain" = "txt")
        dir <- file.path(workspace, "outputs")
        dir.create(dir, showWarnings = FALSE, recursive = TRUE)
        notes <- character(0)
        for (mime in names(data)) {
            value <- data[[mime]]
            if (bytes(value) <= 65536) next
            ext <- c(binary, text)[mime]
            if (is.na(ext)) ext <- "out"
            path <- file.path(dir, sprintf("large-%d-%d.%s", Sys.getpid(), state$saved, ext))
            raw <- if (is.raw(value)) value else if (mime %in% names(binary) && is.character(value)) {
                tryCatch(base64enc::base64decode(paste(value, collapse = "")),
                         error = function(e) charToRaw(enc2utf8(paste(value, collapse = ""))))
            } else charToRaw(enc2utf8(paste(value, collapse = "\n")))
            writeBin(raw, path)
            data[[mime]] <- NULL
            notes <- c(notes, sprintf(
                "[%s output of %d bytes saved to %s: too large to send (a message may carry %.0f bytes)]",
                mime, length(raw), path, limit))
        }
        note <- paste(notes, collapse = "\n")
        plain <- data[["text/plain"]]
        data[["text/plain"]] <- if (is.character(plain) && length(plain)) {
            paste0(paste(plain, collapse = "\n"), "\n", note)
        } else note
        data
    }

    cut_text <- function(text, most) {
        if (nchar(text, type = "bytes") <= most) return(text)
        paste0(substr(text, 1L, most %/% 4L), "\n[... cut: the text was ",
               nchar(text, type = "bytes"), " bytes]")
    }

    bound <- function(msg_type, content) {
        if (msg_type %in% c("display_data", "update_display_data", "execute_result")
            && is.list(content$data)
            && sum(vapply(content$data, bytes, 0)) > limit - 2^18) {
            content$data <- save_large(content$data)
        } else if (msg_type == "error" || (msg_type == "execute_reply" && !is.null(content$traceback))) {
            most <- limit %/% 16
            if (is.character(content$evalue)) content$evalue <- cut_text(content$evalue, most)
            content$traceback <- lapply(head(content$traceback, 200L), function(line) {
                if (is.character(line)) cut_text(line, most) else line
            })
        }
        content
    }

    send <- ex$send_response

    # Sends a stream's text in pieces of at most PIECE characters (each at most 4 bytes).
    send_stream <- function(parent, content) {
        text <- content$text
        if (!is.character(text) || length(text) != 1L || nchar(text, type = "bytes") <= piece)
            return(send("stream", parent, "iopub", content))
        n <- nchar(text)
        starts <- seq.int(1L, n, by = piece)
        for (part in substring(text, starts, pmin(starts + piece - 1L, n))) {
            send("stream", parent, "iopub", list(name = content$name, text = part))
        }
    }

    # --- agent values ---------------------------------------------------------------

    outputs <- c("stream", "display_data", "update_display_data", "error", "clear_output")

    # The value held back as the cell's possible last one goes out as an ordinary output:
    # its text on stdout (as Rscript prints it), or a display when it has more than text.
    flush_pending <- function(parent) {
        bundle <- state$pending
        state$pending <- NULL
        if (is.null(bundle)) return(invisible())
        data <- bundle$data
        if (all(names(data) %in% c("text/plain", "text/html", "application/json"))) {
            text <- paste(data[["text/plain"]], collapse = "\n")
            if (!endsWith(text, "\n")) text <- paste0(text, "\n")
            send_stream(parent, list(name = "stdout", text = text))
        } else {
            data[["application/json"]] <- NULL
            send("display_data", parent, "iopub",
                 bound("display_data", list(data = data, metadata = bundle$metadata)))
        }
    }

    bounded_send <- function(msg_type, parent_msg, socket_name, content) {
        # (The plot IRkernel sends after the cell's code ended was drawn before the value.)
        if (state$agent && socket_name == "iopub" && msg_type %in% outputs
            && !(msg_type == "display_data" && state$final_plot))
            flush_pending(parent_msg)
        if (state$agent && msg_type == "execute_reply" && !is.null(state$pending)) {
            bundle <- state$pending
            state$pending <- NULL
            metadata <- if (length(bundle$metadata)) bundle$metadata else IRkernel:::namedlist()
            send("execute_result", parent_msg, "iopub",
                 bound("execute_result", list(execution_count = ex$execution_count,
                                              data = bundle$data, metadata = metadata)))
        }
        if (msg_type == "stream" && socket_name == "iopub")
            return(send_stream(parent_msg, content))
        send(msg_type, parent_msg, socket_name, bound(msg_type, content))
    }
    ex$send_response <- bounded_send

    json_names_ok <- function(x) {
        n <- names(x)
        is.null(n) || (all(nzchar(n)) && !anyNA(n) && !anyDuplicated(n))
    }

    plain_data <- function(x, depth = 0L) {
        if (depth > 20L) return(FALSE)
        if (is.data.frame(x)) {
            return(json_names_ok(x) && all(vapply(x, function(column) {
                (is.atomic(column) && is.null(dim(column))
                    && typeof(column) %in% c("logical", "integer", "double", "character"))
            }, NA)))
        }
        classes <- oldClass(x)
        if (is.atomic(x)) {
            return(!is.null(x) && typeof(x) %in% c("logical", "integer", "double", "character")
                   && all(classes %in% c("factor", "Date", "POSIXct", "POSIXt"))
                   && length(dim(x)) %in% c(0L, 2L) && (is.null(dim(x)) || is.null(names(x))))
        }
        if (is.list(x) && (is.null(classes) || identical(classes, "list"))) {
            return(json_names_ok(x) && (is.null(names(x)) || length(x) > 0L)
                   && all(vapply(x, plain_data, NA, depth + 1L)))
        }
        FALSE
    }

    as_json <- function(x) {
        if (!plain_data(x) || utils::object.size(x) > 2^20) return(NULL)
        if (is.atomic(x) && is.null(dim(x)) && !is.null(names(x))) {
            x <- if (json_names_ok(x)) as.list(x) else unname(x)
        }
        text <- tryCatch(
            jsonlite::toJSON(x, auto_unbox = TRUE, digits = NA, na = "null", null = "null",
                             dataframe = "rows", matrix = "rowmajor", Date = "ISO8601",
                             POSIXt = "ISO8601", factor = "string"),
            error = function(e) NULL, warning = function(w) NULL)
        if (is.null(text) || nchar(text, type = "bytes") > 65536) NULL else text
    }

    agent_value <- function(obj, visible) {
        IRkernel:::set_last_value(obj)
        flush_pending(ex$current_request) # a value before this one was not the cell's last
        if (!visible) return(invisible())
        shown <- setdiff(getOption("jupyter.display_mimetypes"), c("text/markdown", "text/latex"))
        old <- options(jupyter.display_mimetypes = shown)
        on.exit(options(old))
        bundle <- IRkernel:::prepare_mimebundle_kernel(obj, ex$handle_display_error)
        if (is.null(bundle$data)) return(invisible())
        if (length(intersect(class(obj), getOption("jupyter.pager_classes"))) > 0) {
            ex$page(bundle)
            return(invisible())
        }
        json <- as_json(obj)
        if (!is.null(json)) {
            bundle$data[["text/html"]] <- NULL
            bundle$data[["application/json"]] <- json
        }
        state$pending <- bundle
        invisible()
    }

    agent_wire <- function(msg) {
        json <- function(part, verbatim = FALSE) {
            charToRaw(jsonlite::toJSON(part, auto_unbox = TRUE, json_verbatim = verbatim))
        }
        parts <- list(json(msg$header), json(msg$parent_header), json(msg$metadata),
                      json(msg$content, verbatim = TRUE))
        c(msg$identities, list(charToRaw("<IDS|MSG>")), list(charToRaw(kernel$sign_msg(parts))), parts)
    }

    # --- agent errors, warnings, messages, quit ---------------------------------------

    plain <- function(text) gsub("\033\\[[0-9;]*[A-Za-z]", "", text)

    one_line <- function(call) {
        text <- paste(trimws(deparse(call, width.cutoff = 200L, nlines = 3L)), collapse = " ")
        if (nchar(text) > 200L) paste0(substr(text, 1L, 197L), "...") else text
    }

    # CALLS: the frames IRkernel itself would show (after its evaluate machinery).
    agent_error <- function(e, calls) {
        if (inherits(e, "cellgate_exit")) {
            ex$err <- list(ename = "SystemExit", evalue = as.character(e$status), traceback = list())
            return(invisible())
        }
        call <- conditionCall(e)
        if (identical(call, quote(eval(expr, envir, enclos)))) call <- NULL # the cell itself
        ename <- if (is.null(call)) "Error" else paste0("Error in ", one_line(call))
        evalue <- sub("\n+$", "", plain(conditionMessage(e)))
        summary <- paste0(ename, ": ", evalue)
        cell <- Filter(function(frame) {
            identical(attr(attr(frame, "srcref"), "srcfile")$filename, "<text>")
        }, calls[-1L])
        frames <- IRkernel:::skip_repeated(c(head(calls, 1L), cell))
        lines <- vapply(seq_along(frames), function(i) {
            frame <- frames[[i]]
            text <- if (is.language(frame)) one_line(frame) else as.character(frame)
            ref <- attr(frame, "srcref")
            if (is.null(ref)) sprintf("%d. %s", i, text) else sprintf("%d. %s   # line %d", i, text, ref[[1L]])
        }, "")
        if (length(lines) > 20L) lines <- c(head(lines, 5L), "...", tail(lines, 14L))
        # One frame is the cell's own line, which the summary names already.
        traceback <- if (length(lines) > 1L) c(summary, "Traceback:", lines) else summary
        ex$err <- list(ename = ename, evalue = evalue, traceback = as.list(traceback))
        if (!ex$is_silent()) ex$send_response("error", ex$current_request, "iopub", ex$err)
        invisible()
    }

    agent_warning <- function(o) {
        call <- conditionCall(o)
        machinery <- is.null(call) || identical(call, quote(eval(expr, envir, enclos)))
        where <- if (machinery) "" else paste0(" in ", one_line(call))
        ex$stream(sprintf("Warning message%s:\n%s\n", where, plain(conditionMessage(o))), "stderr")
    }

    agent_message <- function(o) {
        text <- plain(conditionMessage(o))
        ex$stream(if (endsWith(text, "\n")) text else paste0(text, "\n"), "stderr")
    }

    agent_quit <- function(save = "default", status = 0, runLast = TRUE) {
        status <- suppressWarnings(as.integer(status))
        if (length(status) != 1L || is.na(status)) status <- 1L
        stop(structure(class = c("cellgate_exit", "error", "condition"),
                       list(message = "quit", call = NULL, status = status)))
    }

    # --- agent standard input ---------------------------------------------------------

    no_stdin <- function(what) {
        stop(sprintf("%s needs stdin: pass `stdin` with the call", what), call. = FALSE)
    }

    load_stdin <- function() {
        if (is.null(state$lines)) {
            state$lines <- if (nzchar(stdin_file) && file.exists(stdin_file)) {
                readLines(stdin_file, warn = FALSE, encoding = "UTF-8")
            } else character(0)
            state$from_file <- length(state$lines) > 0L
        }
    }

    # The next line of the call's stdin, or NULL at its end.
    next_line <- function(prompt) {
        load_stdin()
        if (!state$from_file) {
            line <- stock_readline(prompt)
            return(if (identical(line, "\004")) NULL else line)
        }
        if (state$at >= length(state$lines)) return(NULL)
        cat(prompt)
        state$at <- state$at + 1L
        state$lines[[state$at]]
    }

    agent_readline <- function(prompt = "") {
        if (!state$allow_stdin) no_stdin("readline()")
        line <- next_line(prompt)
        if (is.null(line)) stop("readline(): no more lines in stdin", call. = FALSE)
        line
    }

    # A file holding what is left of the call's stdin, which is then used up.
    rest_of_stdin <- function() {
        if (!state$allow_stdin) no_stdin("readLines('stdin')")
        load_stdin()
        rest <- character(0)
        if (state$from_file) {
            rest <- state$lines[seq_len(length(state$lines) - state$at) + state$at]
            state$at <- length(state$lines)
        } else {
            while (!is.null(line <- next_line(""))) rest <- c(rest, line)
        }
        path <- tempfile("cellgate-stdin-")
        writeLines(rest, path, useBytes = TRUE)
        path
    }

    begin_cell <- function(request) {
        state$agent <- isTRUE(request$metadata$cellgate_agent)
        plot_options(state$agent)
        colour_options(state$agent)
        state$allow_stdin <- isTRUE(request$content$allow_stdin)
        state$pending <- NULL
        state$final_plot <- FALSE
        state$lines <- NULL
        state$at <- 0L
        unlink(Sys.glob(file.path(tempdir(), "cellgate-stdin-*")))
    }

    # --- wiring -----------------------------------------------------------------------

    # Puts EXPR at the top of the executor's method NAME (or of FN, given), keeping the
    # method's own body and formals after it.
    prepend <- function(fn, expr) {
        out <- fn
        attributes(out) <- NULL
        body(out) <- as.call(c(as.name("{"), expr, as.list(body(fn))[-1L]))
        environment(out) <- environment(fn)
        out
    }
    method <- function(name, expr, env = self_env) {
        assign(name, prepend(get(name, envir = env), expr), envir = env)
    }
    for (name in c("execute", "handle_value", "handle_error", "handle_warning", "handle_message",
                   "readline", "quit", "stream", "send_error_msg", "send_plot")) {
        eval(call("$", ex, name))  # installs IRkernel's method in the object before it is changed
    }
    stock_readline <- get("readline", envir = self_env)

    method("execute", bquote(.(begin_cell)(request)))
    method("handle_value", bquote(if (.(state)$agent) return(.(agent_value)(obj, visible))))
    method("handle_error", bquote({
        .cellgate_calls <- head(sys.calls()[-seq_len(nframe + 1L)], -3)
        if (.(state)$agent) return(.(agent_error)(e, .cellgate_calls))
    }))
    # execute() sends the cell's last plot once its code has run: from send_plot's caller.
    method("send_plot", bquote(assign("final_plot", envir = .(state),
        identical(sys.function(-1L), get("execute", envir = .(self_env))))))
    method("handle_warning", bquote(if (.(state)$agent) return(.(agent_warning)(o))))
    method("handle_message", bquote(if (.(state)$agent) return(.(agent_message)(o))))
    method("readline", bquote(if (.(state)$agent) return(.(agent_readline)(prompt))))
    method("quit", bquote(if (.(state)$agent) return(.(agent_quit)(save, status, runLast))))
    # IRkernel serialises with toJSON(auto_unbox = TRUE), which quotes a JSON text; an
    # agent's value goes in as it is (json_verbatim).
    kernel_env <- as.environment(kernel)
    eval(call("$", kernel, "msg_to_wire"))
    method("msg_to_wire", bquote(if (.(state)$agent) return(.(agent_wire)(msg))), kernel_env)

    # base::file (behind readLines, scan, read.table): "stdin" is the call's stdin for an
    # agent's request, a file of its remaining lines.
    base_file <- get("file", envir = baseenv())
    IRkernel:::replace_in_package("base", "file", prepend(base_file, bquote(
        if (identical(description, "stdin") && .(state)$agent) description <- .(rest_of_stdin)())))

    # A kernel a Jupyter front end started through the gateway may name its working
    # directory (KERNEL_WORKING_DIR): a path relative to the workspace is used when it
    # exists; an absolute one is the front end's own path, meaningless here.
    wanted <- Sys.getenv("KERNEL_WORKING_DIR")
    target <- file.path(workspace, wanted)
    if (nzchar(wanted) && !startsWith(wanted, "/") && !grepl("..", wanted, fixed = TRUE)
        && dir.exists(target)) setwd(target)

    kernel$run()
})
