/*
 * report.js - the script of ibfab's HTML report (tools/cli_html.c writes
 * the page around it). It reads the JSON in <script id="data">, colours
 * each cable of the Graphviz drawing (<g id="cK">) by the busier of its two
 * directions in the frame the slider shows, lists the busiest cable ends,
 * and draws the fabric-wide figure over time and the timeline of the
 * trace's collectives and transfers. The page's address may name a
 * starting point: #frame=N&metric=util|wait|pause|buf&view=N; and
 * #slide=N, #pick=METRIC, #fabric=N move the slider, the metric menu and
 * the fabric menu once the page is drawn, firing the events a user's hand
 * would (what the browser test drives).
 * Errors are shown on the page (#errors) and counted in
 * body[data-errors], so a test reading the DOM sees them.
 */
(function () {
	'use strict';
	var body = document.body;
	var errs = document.getElementById('errors');

	function fail(msg) {
		var p = document.createElement('p');

		p.textContent = msg;
		errs.appendChild(p);
		errs.hidden = false;
		body.setAttribute('data-errors', String((+body.getAttribute('data-errors') || 0) + 1));
	}
	window.addEventListener('error', function (e) { fail('script error: ' + e.message); });

	var D = JSON.parse(document.getElementById('data').textContent);
	var E = 2 * D.cables.length;
	var METRICS = {
		util: 'utilisation',
		wait: 'waiting for credits',
		pause: 'paused by PFC',
		buf: 'receive buffer'
	};

	function unb64(s) {
		var b = atob(s), a = new Uint8Array(b.length);

		for (var i = 0; i < b.length; i++)
			a[i] = b.charCodeAt(i);
		return a;
	}

	var views = D.views.map(function (v) {
		return { name: v.name, end: v.end, frames: v.frames, t: v.t, bufmax: v.bufmax,
			 ops: v.ops, m: { util: unb64(v.util), wait: unb64(v.wait),
					  pause: unb64(v.pause), buf: unb64(v.buf) }, overall: {} };
	});

	/* ColorBrewer RdYlBu, reversed: idle blue to saturated red, as `topo dot` */
	var SCALE = [[0, [69, 117, 180]], [0.25, [145, 191, 219]], [0.5, [254, 224, 144]],
		     [0.75, [252, 141, 89]], [1, [215, 48, 39]]];

	function colour(x) {
		if (!(x > 0))
			return '#cccccc';
		for (var i = 1; i < SCALE.length; i++) {
			if (x <= SCALE[i][0] || i === SCALE.length - 1) {
				var x0 = SCALE[i - 1][0], c0 = SCALE[i - 1][1], c1 = SCALE[i][1];
				var f = Math.min(1, (x - x0) / (SCALE[i][0] - x0));

				return 'rgb(' + c0.map(function (c, k) {
					return Math.round(c + f * (c1[k] - c));
				}).join(',') + ')';
			}
		}
		return '#d73027';
	}

	function fmtTime(ps) {
		if (ps >= 1e9)
			return (ps / 1e9).toFixed(3) + ' ms';
		if (ps >= 1e6)
			return (ps / 1e6).toFixed(3) + ' \u00b5s';
		return (ps / 1e3).toFixed(1) + ' ns';
	}

	function endName(e) {
		var c = D.cables[e >> 1];

		return (e & 1) ? [c[2] + '/' + c[3], c[0] + '/' + c[1]] : [c[0] + '/' + c[1], c[2] + '/' + c[3]];
	}

	var edges = D.cables.map(function (c, k) {
		var g = document.getElementById('c' + k);

		if (!g)
			return null;
		return { path: g.querySelector('path'), title: g.querySelector('title') };
	});
	var nedges = edges.filter(function (x) { return x && x.path; }).length;

	body.setAttribute('data-cables', String(D.cables.length));
	body.setAttribute('data-edges', String(nedges));
	if (D.draw !== 'none' && nedges !== D.cables.length)
		fail('the drawing has ' + nedges + ' of ' + D.cables.length + ' cables');

	var state = { view: 0, frame: 0, metric: 'util', timer: null };
	var acts = [];

	(location.hash || '').replace(/^#/, '').split('&').forEach(function (kv) {
		var p = kv.split('=');

		if (p[0] === 'slide' || p[0] === 'pick' || p[0] === 'fabric')
			acts.push(p);
		else if (p[0] === 'frame')
			state.frame = Math.max(0, parseInt(p[1], 10) || 0);
		else if (p[0] === 'metric' && METRICS[p[1]])
			state.metric = p[1];
		else if (p[0] === 'view')
			state.view = Math.min(views.length - 1, Math.max(0, parseInt(p[1], 10) || 0));
	});

	function value(v, m, f, e) {
		return v.m[m][f * E + e] / 250;
	}

	function shown(v, m, x) {
		if (m === 'buf')
			return Math.round(x * v.bufmax) + ' B';
		return (100 * x).toFixed(1) + '%';
	}

	/* the mean and the largest of the metric over every cable end, per frame */
	function overall(v, m) {
		if (v.overall[m])
			return v.overall[m];
		var mean = [], max = [];

		for (var f = 0; f < v.frames; f++) {
			var s = 0, hi = 0;

			for (var e = 0; e < E; e++) {
				var x = value(v, m, f, e);

				s += x;
				hi = Math.max(hi, x);
			}
			mean.push(E ? s / E : 0);
			max.push(hi);
		}
		v.overall[m] = { mean: mean, max: max };
		return v.overall[m];
	}

	var SVGNS = 'http://www.w3.org/2000/svg';

	function el(parent, name, attrs, text) {
		var x = document.createElementNS(SVGNS, name);

		for (var k in attrs)
			x.setAttribute(k, attrs[k]);
		if (text !== undefined)
			x.textContent = text;
		parent.appendChild(x);
		return x;
	}

	function clear(node) {
		while (node.firstChild)
			node.removeChild(node.firstChild);
	}

	var L = 50, W = 960 - L - 10;

	function drawOverall(v) {
		var svg = document.getElementById('overall'), o = overall(v, state.metric), H = 100;

		clear(svg);
		el(svg, 'rect', { x: L, y: 10, width: W, height: H, fill: 'none', stroke: '#999' });
		el(svg, 'text', { x: L - 4, y: 14, 'text-anchor': 'end', 'font-size': 10 },
		   state.metric === 'buf' ? shown(v, 'buf', 1) : '100%');
		el(svg, 'text', { x: L - 4, y: 10 + H, 'text-anchor': 'end', 'font-size': 10 },
		   state.metric === 'buf' ? '0 B' : '0%');
		el(svg, 'text', { x: L, y: 10 + H + 14, 'font-size': 10 }, '0');
		el(svg, 'text', { x: L + W, y: 10 + H + 14, 'text-anchor': 'end', 'font-size': 10 },
		   fmtTime(v.t[v.frames] || 0));
		[['max', '#d73027', 'the busiest end'], ['mean', '#4575b4', 'the mean of all ends']].forEach(function (s, i) {
			var pts = o[s[0]].map(function (y, f) {
				return (L + W * (f + 0.5) / Math.max(1, v.frames)).toFixed(1) + ',' +
				       (10 + H * (1 - y)).toFixed(1);
			}).join(' ');

			el(svg, 'polyline', { points: pts, fill: 'none', stroke: s[1], 'stroke-width': 1.5 });
			el(svg, 'text', { x: L + 8 + 160 * i, y: 10 + H + 26, 'font-size': 10, fill: s[1] }, s[2]);
		});
		var x = L + W * state.frame / Math.max(1, v.frames);

		el(svg, 'rect', { id: 'cursor', x: x.toFixed(1), y: 10, height: H,
				  width: Math.max(1, W / Math.max(1, v.frames)).toFixed(1), fill: 'rgba(0,0,0,0.25)' });
	}

	var KINDS = ['allreduce', 'allgather', 'reducescatter', 'alltoall', 'broadcast', 'reduce', 'barrier', 'send'];
	var KCOL = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00', '#999999', '#f0e442'];

	function drawOps(v) {
		var sec = document.getElementById('timeline'), svg = document.getElementById('ops');

		clear(svg);
		if (!v.ops.length) {
			sec.hidden = true;
			return;
		}
		sec.hidden = false;
		var ops = v.ops.slice().sort(function (a, b) { return a[1] - b[1] || a[2] - b[2]; });
		var rows = [], MAXR = 40, RH = 12, end = v.end || 1;

		ops.forEach(function (op) {
			var r = 0;

			while (r < rows.length && rows[r] > op[1] && r < MAXR - 1)
				r++;
			rows[r] = Math.max(rows[r] || 0, op[2]);
			op.row = r;
		});
		var H = rows.length * RH;

		svg.setAttribute('height', H + 30);
		ops.forEach(function (op) {
			var x0 = L + W * op[1] / end, x1 = L + W * op[2] / end;
			var k = KINDS.indexOf(op[3]);
			var r = el(svg, 'rect', { x: x0.toFixed(1), y: 4 + op.row * RH, height: RH - 2,
						  width: Math.max(1, x1 - x0).toFixed(1),
						  fill: KCOL[k < 0 ? 6 : k], 'class': 'op' });

			el(r, 'title', {}, op[0] + ': ' + fmtTime(op[1]) + ' \u2013 ' + fmtTime(op[2]));
			if (x1 - x0 > 7 * op[0].length)	/* its name, where it fits */
				el(svg, 'text', { x: (x0 + 3).toFixed(1), y: 4 + op.row * RH + RH - 4,
						  'font-size': 9, fill: '#fff', 'pointer-events': 'none' }, op[0]);
		});
		el(svg, 'text', { x: L, y: H + 20, 'font-size': 10 }, '0');
		el(svg, 'text', { x: L + W, y: H + 20, 'text-anchor': 'end', 'font-size': 10 }, fmtTime(end));
		var f = state.frame, a = L + W * v.t[f] / end, b = L + W * v.t[f + 1] / end;

		el(svg, 'rect', { id: 'opcursor', x: a.toFixed(1), y: 0, height: H + 6,
				  width: Math.max(1, b - a).toFixed(1), fill: 'rgba(0,0,0,0.2)' });
	}

	function drawLegend(v) {
		var lg = document.getElementById('legend'), stops = [];

		for (var i = 0; i <= 10; i++)
			stops.push(colour(Math.max(0.001, i / 10)) + ' ' + (10 * i) + '%');
		lg.innerHTML = '';
		var a = document.createElement('span'), bar = document.createElement('span'),
		    b = document.createElement('span');

		a.textContent = METRICS[state.metric] + ': ' + (state.metric === 'buf' ? '0 B' : '0%');
		bar.className = 'bar';
		bar.style.background = 'linear-gradient(to right, ' + stops.join(', ') + ')';
		b.textContent = state.metric === 'buf' ? shown(v, 'buf', 1) : '100%';
		lg.appendChild(a);
		lg.appendChild(bar);
		lg.appendChild(b);
	}

	function draw() {
		var v = views[state.view], m = state.metric;

		if (state.frame > v.frames - 1)
			state.frame = Math.max(0, v.frames - 1);
		var f = state.frame, top = [];

		document.getElementById('slider').max = String(Math.max(0, v.frames - 1));
		document.getElementById('slider').value = String(f);
		document.getElementById('when').textContent = v.frames ?
			'frame ' + (f + 1) + ' of ' + v.frames + ': ' + fmtTime(v.t[f]) + ' \u2013 ' + fmtTime(v.t[f + 1]) :
			'no samples (the run ended before the first)';
		for (var k = 0; k < edges.length && v.frames; k++) {
			var a = value(v, m, f, 2 * k), b = value(v, m, f, 2 * k + 1), x = Math.max(a, b);
			var ed = edges[k];

			top.push([a, 2 * k], [b, 2 * k + 1]);
			if (!ed || !ed.path)
				continue;
			ed.path.setAttribute('stroke', colour(x));
			ed.path.setAttribute('stroke-width', (1 + 5 * x).toFixed(2));
			if (ed.title) {
				var n = endName(2 * k);

				ed.title.textContent = n[0] + ' \u2192 ' + n[1] + ': ' + shown(v, m, a) + '; ' +
						       n[1] + ' \u2192 ' + n[0] + ': ' + shown(v, m, b);
			}
		}
		top.sort(function (p, q) { return q[0] - p[0] || p[1] - q[1]; });
		var tb = document.querySelector('#top tbody');

		tb.innerHTML = '';
		top.slice(0, 12).forEach(function (p) {
			if (!(p[0] > 0))
				return;
			var tr = document.createElement('tr'), n = endName(p[1]);

			[n[0], n[1], shown(v, m, p[0])].forEach(function (s) {
				var td = document.createElement('td');

				td.textContent = s;
				tr.appendChild(td);
			});
			tb.appendChild(tr);
		});
		drawLegend(v);
		drawOverall(v);
		drawOps(v);
		body.setAttribute('data-frame', String(f));
		body.setAttribute('data-metric', m);
		body.setAttribute('data-view', String(state.view));
	}

	var sel = document.getElementById('view');

	if (views.length > 1) {
		views.forEach(function (v, i) {
			var o = document.createElement('option');

			o.value = String(i);
			o.textContent = v.name;
			sel.appendChild(o);
		});
		document.getElementById('viewbox').hidden = false;
		sel.value = String(state.view);
		sel.addEventListener('change', function () {
			state.view = +sel.value;
			draw();
		});
	}
	var metric = document.getElementById('metric');

	metric.value = state.metric;
	metric.addEventListener('change', function () {
		state.metric = metric.value;
		draw();
	});
	document.getElementById('slider').addEventListener('input', function (e) {
		state.frame = +e.target.value;
		draw();
	});
	document.getElementById('overall').addEventListener('click', function (e) {
		var v = views[state.view], r = e.currentTarget.getBoundingClientRect();
		var f = Math.floor((e.clientX - r.left - L) / W * v.frames);

		if (f >= 0 && f < v.frames) {
			state.frame = f;
			draw();
		}
	});
	var play = document.getElementById('play');

	play.addEventListener('click', function () {
		if (state.timer) {
			clearInterval(state.timer);
			state.timer = null;
			play.textContent = 'play';
			return;
		}
		play.textContent = 'pause';
		if (state.frame >= views[state.view].frames - 1)
			state.frame = 0;
		state.timer = setInterval(function () {
			if (state.frame >= views[state.view].frames - 1) {
				clearInterval(state.timer);
				state.timer = null;
				play.textContent = 'play';
				return;
			}
			state.frame++;
			draw();
		}, 120);
	});
	draw();
	acts.forEach(function (p) {
		var id = { slide: 'slider', pick: 'metric', fabric: 'view' }[p[0]];
		var x = document.getElementById(id);

		x.value = p[1];
		x.dispatchEvent(new Event(p[0] === 'slide' ? 'input' : 'change'));
	});
	body.setAttribute('data-ready', '1');
})();
