/*  cg_tools_jobs — tools whose work runs off the event loop, on a worker (cg_worker): the
    script library's tools and export_notebook on the server's store worker, the execution
    log's on the log's own. The handler checks its
    arguments on the loop, hands the disk work over, and the call is answered when the
    worker gives it back. */
#include "mcp/cg_jsonrpc.h"
#include "mcp/tools/cg_tools.h"
#include "base/cg_util.h"

#include <string.h>

//  On the worker's thread: the job's own work, then nothing of the server.
static void
s_work (cg_work_t *work)
{
    cg_tool_job_t *job = (cg_tool_job_t *)work;
    job->run (job);
}

//  Back on the loop: the call (if it is still there) gets its answer.
static void
s_after (cg_work_t *work, bool ran)
{
    cg_tool_job_t *job = (cg_tool_job_t *)work;
    cg_call_t *call = cg_server_call (job->server, job->key);
    if (call && ran && job->resume)
        job->resume (job, call);
    else if (call) {
        json_t *result = !ran          ? NULL
                         : job->answer ? job->answer (job, call)
                                       : json_incref (job->result);
        if (result)
            cg_server_call_answer (call, result);
        else
            cg_server_call_fail (call, CG_JSONRPC_INTERNAL_ERROR,
                                 ran ? "the tool's work gave no result"
                                     : "the server is ending: the tool's work was not done");
        cg_server_call_end (job->server, call);
    }
    json_decref (job->result);
    if (job->free)
        job->free (job);
    free (job);
}

cg_request_t
cg_tools_job_request (cg_server_t *server, cg_call_t *call)
{
    cg_request_t req = cg_server_call_request (server, call);
    req.tool = cg_tools_find (call->tool);
    return req;
}

void
cg_tools_job_hand_on (cg_server_t *server, cg_call_t *call)
{
    call->task = NULL;     /* the request handed on took it */
    call->recorded = true; /* and its record in the log */
    cg_server_call_end (server, call);
}

bool
cg_tools_job_start (const cg_request_t *req, cg_tool_job_t *job)
{
    return cg_tools_job_start_on (req, job, cg_server_store (req->server));
}

bool
cg_tools_job_start_on (const cg_request_t *req, cg_tool_job_t *job, cg_worker_t *worker)
{
    job->work.work_cb = s_work;
    job->work.after_cb = s_after;
    job->server = req->server;
    //  No session: a cancel marks the call (its answer is not sent) and interrupts no run.
    cg_call_t *call = cg_server_call_new (req, req->tool ? req->tool->name : "", NULL);
    snprintf (job->key, sizeof job->key, "%s", call->key);
    cg_error_t *err = NULL;
    if (cg_worker_queue (worker, &job->work, false, &err) == 0)
        return true;
    cg_server_call_answer (call,
                           cg_tools_error_object ("server_busy", cg_error_message (err), NULL));
    cg_error_destroy (&err);
    cg_server_call_end (req->server, call);
    if (job->free)
        job->free (job);
    free (job);
    return false;
}
