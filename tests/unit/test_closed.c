/*  Unit tests: cg_closed remembers closed session ids per owner, for its keep time and
    at most its capacity, and forgets an id made again. */
#include "bridge/cg_closed.h"
#include "cg_test.h"

static void
s_remembers (void)
{
    const char *name = "an id is remembered per owner for the keep time";
    cg_closed_t *closed = cg_closed_new (4, 1000);
    cg_closed_add (closed, "alice", "sess_a", 100);
    int64_t since = cg_closed_since (closed, "alice", "sess_a", 600);
    int64_t other = cg_closed_since (closed, "bob", "sess_a", 600);
    int64_t late = cg_closed_since (closed, "alice", "sess_a", 1101);
    cg_closed_forget (closed, "alice", "sess_a");
    int64_t forgotten = cg_closed_since (closed, "alice", "sess_a", 600);
    cg_closed_destroy (&closed);
    CHECK (since == 500, "since %lld", (long long)since);
    CHECK (other == -1, "another owner's id: %lld", (long long)other);
    CHECK (late == -1, "past the keep time: %lld", (long long)late);
    CHECK (forgotten == -1, "forgotten: %lld", (long long)forgotten);
    CHECK (closed == NULL, "destroy sets NULL");
    s_passes++;
}

static void
s_bounded (void)
{
    const char *name = "past its capacity the oldest id goes first";
    cg_closed_t *closed = cg_closed_new (3, 1000000);
    const char *ids[] = {"s1", "s2", "s3", "s4"};
    for (int i = 0; i < 4; i++)
        cg_closed_add (closed, "o", ids[i], i);
    int64_t oldest = cg_closed_since (closed, "o", "s1", 10);
    int64_t newest = cg_closed_since (closed, "o", "s4", 10);
    cg_closed_add (closed, "o", "s2", 20); /* closed again: one entry, the new time */
    cg_closed_add (closed, "o", "s5", 21);
    int64_t again = cg_closed_since (closed, "o", "s2", 30);
    int64_t kept = cg_closed_since (closed, "o", "s4", 30);
    cg_closed_destroy (&closed);
    CHECK (oldest == -1 && newest == 7, "oldest %lld, newest %lld", (long long)oldest,
           (long long)newest);
    CHECK (again == 10 && kept == 27, "again %lld, kept %lld", (long long)again, (long long)kept);
    s_passes++;
}

int
main (void)
{
    s_remembers ();
    s_bounded ();
    printf ("%d passed, %d failed\n", s_passes, s_failures);
    return s_failures ? 1 : 0;
}
