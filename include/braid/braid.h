// BraidDB public API: include this one header.
#pragma once

#include <braid/database.h>  // IWYU pragma: export
#include <braid/key.h>       // IWYU pragma: export
#include <braid/options.h>   // IWYU pragma: export
#include <braid/status.h>    // IWYU pragma: export
