/* SPDX-License-Identifier: MIT */
/*
 * ibfab_ns3.cc - the ns-3 side of bench/compare-ns3: the same two
 * scenarios as ibfab's B1 and B3-volume benchmarks, built with
 * ns-3's point-to-point links and IPv4 routing (--routing: global, ns-3's
 * Ipv4GlobalRouting, or nix, nix-vector routing, which bench/compare-ns3
 * uses: it is the faster of the two on fat trees), so that one script
 * can run both simulators on one machine at one moment and print the
 * ratios. A measurement tool, not part of ibfab's build: bench/compare-ns3
 * compiles it with g++ against Debian's libns3-dev (3.37).
 *
 *   dumbbell  `senders` hosts -> left router == bottleneck == right router
 *             -> `senders` receivers, every link `rate`; sender i sends
 *             `count` UDP datagrams of `pkt` bytes to receiver i, one every
 *             `gap` (ns-3's UdpClient: constant bit rate), starting at
 *             i x gap / senders. B1: 16 senders, 10 Gb/s, 1000 B every
 *             13.474 us each, 0.95 of the bottleneck, 0.1 s.
 *   fattree   a k-ary 3-level fat tree (k pods of k/2 edge and k/2
 *             aggregation switches, (k/2)^2 cores, k^3/4 hosts; k = 8 is
 *             128 hosts), every link `rate`; host i sends `bytes` to host
 *             i + shift (mod hosts), over UDP (UdpClient, `pkt`-byte
 *             datagrams paced at `gap`) or TCP (BulkSend, MSS = pkt).
 *             Hosts are numbered pod by pod, edge by edge, as ibfab's
 *             `topo gen fattree --levels 3` numbers them.
 *
 * Printed (key=value, one per line): events (Simulator::GetEventCount),
 * packet_hops (PhyRxEnd on every device: one per packet per link, ACKs
 * included), packets and bytes delivered to the sinks, sim_end_s (the
 * last byte delivered), wall_run_s (Simulator::Run alone), wall_total_s
 * (the process so far: topology, routing and run), rss_kb (getrusage).
 * Links have a 15 ns propagation delay (3 m at 5 ns/m, ibfab's default
 * cable); routers add no processing latency; every device adds PPP
 * framing (2 bytes) and keeps ns-3's default queues (a DropTail device
 * queue of 100 packets under the FqCoDel queue disc that
 * Ipv4AddressHelper::Assign installs).
 */
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/nix-vector-routing-module.h"
#include "ns3/point-to-point-module.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

static uint64_t g_hops;
static uint64_t g_rx_pkts;
static uint64_t g_rx_bytes;
static Time g_last_rx;

static void
PhyRxEnd(Ptr<const Packet>)
{
    g_hops++;
}

static void
SinkRx(Ptr<const Packet> p, const Address&)
{
    g_rx_pkts++;
    g_rx_bytes += p->GetSize();
    g_last_rx = Simulator::Now();
}

struct Net
{
    PointToPointHelper p2p;
    Ipv4AddressHelper addr;
    std::vector<NetDeviceContainer> links;

    bool hops;

    Net(const std::string& rate, uint32_t mtu, bool count_hops)
        : hops(count_hops)
    {
        p2p.SetDeviceAttribute("DataRate", StringValue(rate));
        p2p.SetDeviceAttribute("Mtu", UintegerValue(mtu));
        p2p.SetChannelAttribute("Delay", StringValue("15ns"));
        addr.SetBase("10.0.0.0", "255.255.255.252");
    }

    /* A cable between a and b, its own /30; returns a's address. */
    Ipv4Address Link(Ptr<Node> a, Ptr<Node> b)
    {
        NetDeviceContainer d = p2p.Install(a, b);
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        for (uint32_t i = 0; hops && i < d.GetN(); i++)
            d.Get(i)->TraceConnectWithoutContext("PhyRxEnd", MakeCallback(&PhyRxEnd));
        links.push_back(d);
        return ifs.GetAddress(0);
    }
};

static void
Sink(Ptr<Node> n, const char* proto, uint16_t port)
{
    PacketSinkHelper h(proto, InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer a = h.Install(n);
    a.Get(0)->TraceConnectWithoutContext("Rx", MakeCallback(&SinkRx));
    a.Start(Seconds(0));
}

static void
UdpCbr(Ptr<Node> src, Ipv4Address dst, uint16_t port, uint32_t count, uint32_t pkt, Time gap,
       Time start)
{
    UdpClientHelper c(dst, port);
    c.SetAttribute("MaxPackets", UintegerValue(count));
    c.SetAttribute("Interval", TimeValue(gap));
    c.SetAttribute("PacketSize", UintegerValue(pkt));
    ApplicationContainer a = c.Install(src);
    a.Start(start);
}

int
main(int argc, char* argv[])
{
    auto t0 = std::chrono::steady_clock::now();
    std::string scenario = "dumbbell", rate = "10Gbps", proto = "udp", routing = "global";
    uint32_t senders = 16, pkt = 0, count = 7422, k = 8, shift = 1;
    uint64_t bytes = 16646144;   /* 1/8 of a 64 MiB ring allreduce's bytes per rank */
    double gap_ns = -1;          /* default: dumbbell 13474 ns (1000 B x 8 /
                                  * (0.95 x 10 Gb/s / 16)); fattree: line rate */
    bool ecmp = false, hops = true;

    CommandLine cmd(__FILE__);
    cmd.AddValue("scenario", "dumbbell or fattree", scenario);
    cmd.AddValue("rate", "every link's data rate", rate);
    cmd.AddValue("senders", "dumbbell: senders (and receivers)", senders);
    cmd.AddValue("count", "dumbbell: datagrams per sender", count);
    cmd.AddValue("gap", "UDP: ns between datagrams of one sender (default: see source)", gap_ns);
    cmd.AddValue("pkt", "UDP datagram payload / TCP MSS, bytes (default: dumbbell 1000, fattree 4096)", pkt);
    cmd.AddValue("k", "fattree: radix (k^3/4 hosts)", k);
    cmd.AddValue("bytes", "fattree: bytes each host sends", bytes);
    cmd.AddValue("shift", "fattree: host i sends to i + shift", shift);
    cmd.AddValue("proto", "fattree: udp or tcp", proto);
    cmd.AddValue("ecmp", "fattree, global routing: random per-packet ECMP (RandomEcmpRouting)", ecmp);
    cmd.AddValue("hops", "count packet-hops (a PhyRxEnd callback on every device)", hops);
    cmd.AddValue("routing", "global (Ipv4GlobalRouting) or nix (nix-vector routing)", routing);
    cmd.Parse(argc, argv);
    if (!pkt)
        pkt = scenario == "dumbbell" ? 1000 : 4096;

    uint32_t mtu = pkt + 100;    /* room for IP, UDP/TCP (+ options) headers */
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(pkt));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
    if (ecmp)
        Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(true));

    if (routing != "global" && routing != "nix")
    {
        std::fprintf(stderr, "ibfab_ns3: unknown routing '%s' (global, nix)\n", routing.c_str());
        return 2;
    }
    if (ecmp && routing != "global")
    {
        std::fprintf(stderr, "ibfab_ns3: --ecmp needs --routing=global (nix-vector routing "
                             "takes one path per destination)\n");
        return 2;
    }
    Net net(rate, mtu, hops);
    InternetStackHelper stack;
    /* Global routing gives every node a table with a route per /30 link
     * and searches it linearly per packet, so its cost per packet grows
     * with the fabric; nix-vector routing computes a source route per
     * destination once (a BFS over the topology) and caches it. */
    Ipv4NixVectorHelper nix;
    if (routing == "nix")
        stack.SetRoutingHelper(nix);
    const uint16_t port = 9;
    uint64_t expect_bytes = 0;

    if (scenario == "dumbbell")
    {
        NodeContainer left, right, routers;
        left.Create(senders);
        right.Create(senders);
        routers.Create(2);
        stack.Install(left);
        stack.Install(right);
        stack.Install(routers);
        std::vector<Ipv4Address> raddr(senders);
        for (uint32_t i = 0; i < senders; i++)
        {
            net.Link(left.Get(i), routers.Get(0));
            raddr[i] = net.Link(right.Get(i), routers.Get(1));
        }
        net.Link(routers.Get(0), routers.Get(1));
        if (routing == "global")
            Ipv4GlobalRoutingHelper::PopulateRoutingTables();
        if (gap_ns < 0)
            gap_ns = 13474;
        Time gap = NanoSeconds(gap_ns);
        for (uint32_t i = 0; i < senders; i++)
        {
            Sink(right.Get(i), "ns3::UdpSocketFactory", port);
            UdpCbr(left.Get(i), raddr[i], port, count, pkt, gap,
                   NanoSeconds(gap_ns * i / senders));
        }
        expect_bytes = uint64_t(senders) * count * pkt;
    }
    else if (scenario == "fattree")
    {
        uint32_t h = k / 2, nhost = k * k * k / 4;
        NodeContainer hosts, edge, agg, core;
        hosts.Create(nhost);
        edge.Create(k * h);
        agg.Create(k * h);
        core.Create(h * h);
        stack.Install(hosts);
        stack.Install(edge);
        stack.Install(agg);
        stack.Install(core);
        std::vector<Ipv4Address> haddr(nhost);
        for (uint32_t i = 0; i < nhost; i++)   /* pod i / (h h), edge i / h */
            haddr[i] = net.Link(hosts.Get(i), edge.Get(i / h));
        for (uint32_t p = 0; p < k; p++)
            for (uint32_t e = 0; e < h; e++)
                for (uint32_t a = 0; a < h; a++)
                    net.Link(edge.Get(p * h + e), agg.Get(p * h + a));
        for (uint32_t p = 0; p < k; p++)
            for (uint32_t a = 0; a < h; a++)
                for (uint32_t c = 0; c < h; c++)
                    net.Link(agg.Get(p * h + a), core.Get(a * h + c));
        if (routing == "global")
            Ipv4GlobalRoutingHelper::PopulateRoutingTables();
        bool tcp = proto == "tcp";
        const char* f = tcp ? "ns3::TcpSocketFactory" : "ns3::UdpSocketFactory";
        /* UDP pacing: a datagram's wire bytes (payload + UDP 8 + IPv4 20 +
         * PPP 2) at the link rate, rounded up to the next ns. */
        if (gap_ns < 0)
        {
            DataRate dr(rate);
            gap_ns = std::ceil((pkt + 30) * 8e9 / double(dr.GetBitRate()));
        }
        Time gap = NanoSeconds(gap_ns);
        uint32_t pkts = (bytes + pkt - 1) / pkt;
        for (uint32_t i = 0; i < nhost; i++)
        {
            uint32_t dst = (i + shift) % nhost;
            Sink(hosts.Get(dst), f, port);
            if (tcp)
            {
                BulkSendHelper b(f, InetSocketAddress(haddr[dst], port));
                b.SetAttribute("MaxBytes", UintegerValue(bytes));
                b.SetAttribute("SendSize", UintegerValue(pkt));
                b.Install(hosts.Get(i)).Start(Seconds(0));
            }
            else
            {
                UdpCbr(hosts.Get(i), haddr[dst], port, pkts, pkt, gap, Seconds(0));
            }
        }
        expect_bytes = uint64_t(nhost) * (tcp ? bytes : uint64_t(pkts) * pkt);
    }
    else
    {
        std::fprintf(stderr, "ibfab_ns3: unknown scenario '%s' (dumbbell, fattree)\n",
                     scenario.c_str());
        return 2;
    }

    Simulator::Stop(Seconds(100));
    auto t1 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t2 = std::chrono::steady_clock::now();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    std::printf("scenario=%s\nproto=%s\nevents=%llu\npacket_hops=%llu\npackets=%llu\n"
                "bytes=%llu\nexpected_bytes=%llu\nsim_end_s=%.9f\nwall_setup_s=%.3f\n"
                "wall_run_s=%.3f\nwall_total_s=%.3f\nrss_kb=%ld\n",
                scenario.c_str(), scenario == "dumbbell" ? "udp" : proto.c_str(),
                (unsigned long long)Simulator::GetEventCount(), (unsigned long long)g_hops,
                (unsigned long long)g_rx_pkts, (unsigned long long)g_rx_bytes,
                (unsigned long long)expect_bytes, g_last_rx.GetSeconds(),
                std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count(),
                std::chrono::duration<double>(t2 - t0).count(), ru.ru_maxrss);
    Simulator::Destroy();
    return 0;
}
