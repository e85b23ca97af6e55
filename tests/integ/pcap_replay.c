// SPDX-License-Identifier: MIT
/*
 * pcap_replay - send the RoCEv2 datagrams of capture files again, IP header
 * and all, out of one interface: a sender that is not umcast.
 *
 *   pcap_replay IFNAME FILE.pcap...
 *
 * Every IPv4 UDP datagram to port 4791 in the files (classic pcap, Ethernet)
 * is sent as captured through a raw socket (IPPROTO_RAW: the header is
 * ours), so its source address, source port, TTL, TOS, DF and IPv4
 * identification are those of the host that sent it, and its ICRC still
 * verifies.  Only the IPv4 header checksum and total length are rewritten
 * by the kernel, from the same values.  Multicast destinations leave through
 * IFNAME (IP_MULTICAST_IF).  Needs CAP_NET_RAW.
 *
 * Prints "replayed N datagrams" and exits 0 when at least one was sent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { PCAP_HDR = 24, REC_HDR = 16, ETH_HLEN = 14, ROCE_PORT = 4791, MAX_FILE = 1 << 24 };

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The IPv4 packet of a frame when it is a RoCEv2 datagram, else NULL. */
static const uint8_t *roce_ipv4(const uint8_t *fr, size_t caplen, size_t *iplen)
{
	const uint8_t *ip = fr + ETH_HLEN;
	size_t hl, tot;

	if (caplen < ETH_HLEN + 28 || fr[12] != 0x08 || fr[13] != 0x00 || ip[0] >> 4 != 4)
		return NULL;
	hl = (size_t)(ip[0] & 15) * 4;
	tot = (size_t)(ip[2] << 8 | ip[3]);
	if (hl < 20 || tot < hl + 8 || tot > caplen - ETH_HLEN || ip[9] != IPPROTO_UDP ||
	    (ip[hl + 2] << 8 | ip[hl + 3]) != ROCE_PORT)
		return NULL;
	*iplen = tot;
	return ip;
}

static int replay_file(int fd, const char *path, unsigned *sent)
{
	static uint8_t buf[MAX_FILE];
	size_t n, pos = PCAP_HDR;
	FILE *f = fopen(path, "rb");

	if (!f) {
		perror(path);
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n < PCAP_HDR || le32(buf) != 0xa1b2c3d4 || le32(buf + 20) != 1) {
		fprintf(stderr, "%s: not a little-endian Ethernet pcap file\n", path);
		return -1;
	}
	while (pos + REC_HDR <= n) {
		size_t caplen = le32(buf + pos + 8), iplen;
		const uint8_t *ip;
		struct sockaddr_in to = {.sin_family = AF_INET};

		if (caplen > n - pos - REC_HDR) {
			fprintf(stderr, "%s: truncated record\n", path);
			return -1;
		}
		ip = roce_ipv4(buf + pos + REC_HDR, caplen, &iplen);
		pos += REC_HDR + caplen;
		if (!ip)
			continue;
		memcpy(&to.sin_addr, ip + 16, 4);
		if (sendto(fd, ip, iplen, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)iplen) {
			perror("sendto");
			return -1;
		}
		(*sent)++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ip_mreqn mr = {0};
	unsigned sent = 0;
	int fd, i;

	if (argc < 3) {
		fprintf(stderr, "usage: %s IFNAME FILE.pcap...\n", argv[0]);
		return 2;
	}
	mr.imr_ifindex = (int)if_nametoindex(argv[1]);
	if (!mr.imr_ifindex) {
		perror(argv[1]);
		return 1;
	}
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		perror("socket(AF_INET, SOCK_RAW)");
		return 1;
	}
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr))) {
		perror("IP_MULTICAST_IF");
		return 1;
	}
	for (i = 2; i < argc; i++)
		if (replay_file(fd, argv[i], &sent))
			return 1;
	close(fd);
	printf("replayed %u datagrams\n", sent);
	return sent ? 0 : 1;
}
