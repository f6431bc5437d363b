/* See Sources/CPlatform/include/cc_platform.h. */
#define _GNU_SOURCE
#include "cc_platform.h"

#include <string.h>

#if defined(__linux__) || defined(__FreeBSD__)
#include <elf.h>
#include <link.h>

struct cc_build_id_search {
    const void *address;
    unsigned char *out;
    size_t capacity;
    size_t length;
    int found;
};

/* The notes of a PT_NOTE segment: a header, a name and a descriptor each, the name and the
 * descriptor padded to the segment's alignment (4, or 8 in a segment aligned to 8, as the
 * GNU property notes are). */
static size_t cc_build_id_in_notes(const unsigned char *p, size_t size, size_t align, unsigned char *out,
                                   size_t capacity) {
    size_t at = 0;
    while (at + sizeof(ElfW(Nhdr)) <= size) {
        const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)(p + at);
        size_t name = ((size_t)note->n_namesz + align - 1) & ~(align - 1);
        size_t desc = ((size_t)note->n_descsz + align - 1) & ~(align - 1);
        size_t next = at + sizeof(ElfW(Nhdr)) + name + desc;
        if (next > size || next < at) return 0;
        const unsigned char *name_at = p + at + sizeof(ElfW(Nhdr));
        if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name_at, "GNU", 4) == 0) {
            if (note->n_descsz == 0 || note->n_descsz > capacity) return 0;
            memcpy(out, name_at + name, note->n_descsz);
            return note->n_descsz;
        }
        at = next;
    }
    return 0;
}

static int cc_build_id_visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct cc_build_id_search *search = data;
    uintptr_t address = (uintptr_t)search->address;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum && !holds; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        holds = ph->p_type == PT_LOAD && address >= start && address - start < ph->p_memsz;
    }
    if (!holds) return 0;
    for (int i = 0; i < info->dlpi_phnum && search->length == 0; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        search->length = cc_build_id_in_notes((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz,
                                              ph->p_align == 8 ? 8 : 4, search->out, search->capacity);
    }
    search->found = 1;
    return 1;   /* the object holding the address: stop */
}

size_t ccint_platform_build_id(const void *address, unsigned char *out, size_t capacity) {
    struct cc_build_id_search search = {address, out, capacity, 0, 0};
    dl_iterate_phdr(cc_build_id_visit, &search);
    return search.found ? search.length : 0;
}
#else
size_t ccint_platform_build_id(const void *address, unsigned char *out, size_t capacity) {
    (void)address; (void)out; (void)capacity;
    return 0;
}
#endif
