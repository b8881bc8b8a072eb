// Gives every test process a cache home of its own (see cache_home.c).
#pragma once

/// The folder XDG_CACHE_HOME names for this test process, or NULL when it could not be made (then
/// the process has stopped before any test ran).
const char *_Nullable haneke_private_cache_home(void);
