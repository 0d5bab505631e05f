package main

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listening returns the addresses of this process's listening TCP
// sockets (the tcp transport's listener), read from /proc: Linux only.
func listening() ([]string, error) {
	// The inodes of this process's sockets.
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		return nil, err
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			if os.IsNotExist(err) && strings.HasSuffix(table, "6") {
				continue // no IPv6
			}
			return nil, err
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, line := range lines[1:] {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !mine[f[9]] { // 0A: LISTEN
				continue
			}
			a, err := procAddr(f[1])
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %v", table, f[1], err)
			}
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// procAddr decodes an address of /proc/net/tcp{,6}: the IP in hex, as
// 32-bit words in host (here little-endian) order, a colon, the port in
// hex.
func procAddr(s string) (string, error) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("no port")
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", fmt.Errorf("bad address")
	}
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(net.IP(raw).String(), strconv.FormatUint(port, 10)), nil
}
