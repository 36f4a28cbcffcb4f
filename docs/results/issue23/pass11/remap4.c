#define _GNU_SOURCE
#include <link.h>
#include <sys/mman.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
#define HP (2ul << 20)
// Copies the main program's executable segment into physically contiguous anonymous huge pages
// (at the same offset modulo 2 MiB as its file offset) and moves them over the text.
static int cb(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size; (void)data;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t s = (info->dlpi_addr + ph->p_vaddr) & ~4095ul;
    uintptr_t e = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + 4095) & ~4095ul;
    size_t len = e - s, off = (ph->p_vaddr & ~4095ul) % HP;
    size_t span = (off + len + HP - 1) / HP * HP;
    char* raw = mmap(NULL, span + HP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char* hp = (char*)(((uintptr_t)raw + HP - 1) & ~(HP - 1));
    madvise(hp, span, MADV_HUGEPAGE);
    for (size_t o = 0; o < span; o += HP) hp[o] = 0;
    memcpy(hp + off, (void*)s, len);
    mprotect(hp + off, len, PROT_READ | PROT_EXEC);
    void* r = mremap(hp + off, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void*)s);
    if (getenv("REMAP_VERBOSE")) {
      int fd = open("/proc/self/pagemap", O_RDONLY); uint64_t a, b;
      pread(fd, &a, 8, (s / 4096) * 8); pread(fd, &b, 8, ((e - 4096) / 4096) * 8); close(fd);
      fprintf(stderr, "text %zu KiB at off %zx: %s, pfn first %lx last %lx (contiguous: %s)\n", len >> 10, off,
              r == (void*)s ? "ok" : "FAILED", (unsigned long)(a & ((1ul << 55) - 1)), (unsigned long)(b & ((1ul << 55) - 1)),
              ((b & ((1ul << 55) - 1)) - (a & ((1ul << 55) - 1))) == (len / 4096 - 1) ? "yes" : "no");
    }
  }
  return 1;
}
__attribute__((constructor)) static void init(void) { dl_iterate_phdr(cb, NULL); }
