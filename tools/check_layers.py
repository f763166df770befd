#!/usr/bin/env python3
"""Enforces the layering of src/ (see docs/architecture.md).

Every `#include "L/..."` in src/<layer>/ must name a layer that <layer> may use, and
system headers that belong to one layer (Vulkan, liburing, llhttp) may only be included
there. Usage: check_layers.py SRC_DIR STAMP_FILE. Exit 1 and one line per violation.
"""
import os
import re
import sys

# layer -> layers it may include (itself is always allowed). Order follows src/meson.build.
ALLOWED = {
    'base': set(),
    'rt': {'base'},
    'http': {'base', 'rt'},
    'gpu': {'base'},
    'model': {'base', 'gpu'},
    'text': {'base'},
    'engine': {'base', 'gpu', 'model', 'text'},
    'api': {'base', 'text', 'engine'},
    'server': {'base', 'rt', 'http', 'gpu', 'model', 'text', 'engine', 'api'},
}
# system header prefix -> the only src/ subtrees allowed to include it
PRIVATE_SYSTEM = {
    'vulkan/': ('gpu/vk/',),
    'liburing': ('rt/',),
    'llhttp': ('http/',),
    'sys/epoll': ('rt/',),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def check(src):
    bad = []
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(('.hpp', '.cpp', '.h', '.c', '.inc')):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src).replace(os.sep, '/')
            layer = rel.split('/')[0]
            if layer not in ALLOWED:
                bad.append(f'{rel}: directory src/{layer} is not a declared layer')
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    kind, inc = m.groups()
                    if kind == '"':
                        top = inc.split('/')[0]
                        if '/' in inc and top in ALLOWED and top != layer and top not in ALLOWED[layer]:
                            bad.append(f'{rel}:{n}: layer "{layer}" may not include "{inc}"')
                    for prefix, owners in PRIVATE_SYSTEM.items():
                        if inc.startswith(prefix) and not rel.startswith(owners):
                            bad.append(f'{rel}:{n}: <{inc}> is private to {", ".join(owners)}')
    return bad


def main():
    src, stamp = sys.argv[1], sys.argv[2]
    bad = check(src)
    for line in bad:
        print('layering violation:', line, file=sys.stderr)
    if bad:
        return 1
    with open(stamp, 'w') as f:
        f.write('ok\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
