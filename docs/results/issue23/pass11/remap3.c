#define _GNU_SOURCE
#include <link.h>
#include <sys/mman.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
// REMAP="a-b,c-d": remaps file pages [a,b) ... (hex) of the main program onto fresh anonymous memory.
static int cb(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size; (void)data;
  char* s = getenv("REMAP"); if (!s) return 1;
  char buf[512]; strncpy(buf, s, sizeof buf - 1); buf[511] = 0;
  for (char* tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char* dash = strchr(tok, '-'); if (!dash) continue; *dash = 0;
    uintptr_t from = info->dlpi_addr + (strtoul(tok, 0, 16) << 12), to = info->dlpi_addr + (strtoul(dash + 1, 0, 16) << 12);
    size_t len = to - from;
    void* m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(m, (void*)from, len);
    mprotect(m, len, PROT_READ | PROT_EXEC);
    if (mremap(m, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void*)from) != (void*)from) fprintf(stderr, "remap FAILED\n");
  }
  return 1;
}
__attribute__((constructor)) static void init(void) { dl_iterate_phdr(cb, NULL); }
