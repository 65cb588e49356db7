// The built-in engine understanding what is asked: follow-ups searched with what the
// conversation is about, a change of topic leaving a specialised agent, sources in French,
// German and Chinese, compounds written as one word or two, and a Q&A pair answering a
// paraphrase of its question alone.
import { test, before } from "node:test";
import assert from "node:assert/strict";
import { client, startAccount, startHelpSite, newChatbot, newSession, settled, upload } from "./suite.mjs";

let worker, site, api, key;

before(async () => {
  site = await startHelpSite();
  ({ worker, api, key } = await startAccount());
});

async function ask(session, query) {
  const r = await api.post(`/session/${session.uuid}/message/non-stream`, { body: { query } });
  assert.equal(r.status, 200, r.text);
  return { ...r.json, citations: JSON.parse(r.json.cite_data_json), meta: JSON.parse(r.json.meta_json) };
}

async function shopBot() {
  const bot = await newChatbot(api, { name: "Northwind help", show_citations: true });
  for (const p of ["shipping", "returns", "warranty"]) {
    const s = (await api.post(`/chatbot/${bot.uuid}/data-source/url`, { body: { url: `${site.base}/${p}` } })).json;
    assert.equal((await settled(api, s.uuid)).status, "success");
  }
  return bot;
}

async function uploadText(bot, name, text) {
  const r = await upload(worker, key, bot.uuid, { name, bytes: new TextEncoder().encode(text), type: name.endsWith(".txt") ? "text/plain" : "text/markdown" });
  assert.equal(r.status, 200, r.text);
  assert.equal((await settled(api, r.json.uuid)).status, "success");
  return r.json.uuid;
}

test("a follow-up is searched with what the conversation is about", async () => {
  const bot = await shopBot();
  const session = await newSession(api, bot);
  const first = await ask(session, "How do I get a refund?");
  assert.equal(first.citations["1"].title, "Returns and refunds | Northwind Outfitters");

  const followUp = await ask(session, "And how many working days does that take?");
  assert.equal(followUp.citations["1"].title, "Returns and refunds | Northwind Outfitters", followUp.response);
  assert.match(followUp.response, /five to seven working days/);

  // Alone, the same words are about delivery times.
  const alone = await ask(await newSession(api, bot), "And how many working days does that take?");
  assert.notEqual(alone.citations["1"]?.title, "Returns and refunds | Northwind Outfitters", alone.response);

  // A follow-up about something no source mentions is not answered with the last topic.
  const elsewhere = await ask(session, "What about snorkelwax?");
  assert.equal(elsewhere.meta.answered, false, elsewhere.response);
  assert.equal(elsewhere.finish_reason, "stop");
});

test("a question about something else leaves a specialised agent for the general one; a follow-up stays", async () => {
  const bot = await shopBot();
  const weather = await api.post(`/chatbot/${bot.uuid}/agent/create`, {
    body: {
      name: "Weather", type: "user-facing", enabled: true, use_all_sources: false, data_source_uuids: [],
      description: "Weather forecasts: rain, sunshine, temperature and wind.",
    },
  });
  assert.equal(weather.status, 200, weather.text);
  const session = await newSession(api, bot);
  assert.equal((await ask(session, "Will there be rain and wind tomorrow?")).meta.agent.name, "Weather");
  assert.equal((await ask(session, "And on Sunday?")).meta.agent.name, "Weather", "a follow-up stays");
  const refund = await ask(session, "What is the refund window?");
  assert.equal(refund.meta.agent.name, "General Q&A");
  assert.equal(refund.citations["1"].title, "Returns and refunds | Northwind Outfitters");
  assert.match(refund.response, /30 days/);
});

test("a French source is answered in French", async () => {
  const bot = await newChatbot(api, { name: "Médiathèque", show_citations: true });
  await uploadText(bot, "pret.md", [
    "# Emprunter des documents",
    "",
    "## Durée du prêt",
    "",
    "Les livres et les CD sont prêtés pour quatre semaines. Les DVD et les jeux de société sont prêtés pour deux semaines seulement, car ils sont très demandés.",
    "",
    "## Rendre les documents",
    "",
    "En dehors des heures d'ouverture, utilisez la boîte de retour installée à droite de la porte principale.",
  ].join("\n"));
  await uploadText(bot, "horaires.md", "# Horaires\n\nLa médiathèque est ouverte du mardi au samedi de 10 h à 18 h. Elle est fermée le dimanche et le lundi.\n");
  const session = await newSession(api, bot);
  const r = await ask(session, "Je peux emprunter un DVD pendant combien de temps ?");
  assert.equal(r.meta.answered, true, r.response);
  assert.equal(r.citations["1"].file_name, "pret.md");
  assert.match(r.response, /Les DVD et les jeux de société sont prêtés pour deux semaines/);
  const closed = await ask(session, "Est-ce ouvert le dimanche ?");
  assert.equal(closed.citations["1"].file_name, "horaires.md");
  assert.match(closed.response, /fermée le dimanche/);
  // Nothing to answer with: said in the question's language.
  const none = await ask(session, "Quelle est la capitale de la Mongolie ?");
  assert.equal(none.meta.answered, false, none.response);
  assert.match(none.response, /^Je n'ai pas trouvé de réponse à cela/);
});

test("a German question finds its source whatever its words' endings", async () => {
  // The index stems English only: "Rechnung" is not "Rechnungen" to it.
  const bot = await newChatbot(api, { name: "Kundendienst", show_citations: true });
  await uploadText(bot, "rechnungen.md", "# Rechnungen\n\nAlle Rechnungen verschicken wir am Monatsende per E-Mail. Eine Kopie liegt jederzeit in Ihrem Kundenkonto.\n");
  await uploadText(bot, "lieferung.md", "# Lieferung\n\nWir liefern innerhalb von drei Werktagen. Ab 50 Euro ist die Lieferung kostenlos.\n");
  const search = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "Wann bekomme ich meine Rechnung?" } });
  assert.equal(search.status, 200, search.text);
  assert.equal(search.json.results[0]?.file_name, "rechnungen.md", search.text);
  const r = await ask(await newSession(api, bot), "Wann bekomme ich meine Rechnung?");
  assert.equal(r.meta.answered, true, r.response);
  assert.equal(r.citations["1"].file_name, "rechnungen.md");
  assert.match(r.response, /Alle Rechnungen verschicken wir am Monatsende/);
});

test("words the question writes as two and the source as one, or the other way, still match", async () => {
  const bot = await newChatbot(api, { name: "Account help", show_citations: true });
  await uploadText(bot, "login.md", "# Login problems\n\nIf the login page rejects your password, reset it from the email we sent when your username was created.\n");
  await uploadText(bot, "printer.md", "# Printer\n\nTo set up the printer, plug it in and follow the wizard on its screen.\n");
  await uploadText(bot, "billing.md", "# Billing\n\nYour page rejects nothing: every name on an invoice is the account holder's, and the password for invoices is separate.\n");
  const search = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "I can't log in with my user name" } });
  assert.equal(search.status, 200, search.text);
  assert.equal(search.json.results[0]?.file_name, "login.md", search.text);
  const r = await ask(await newSession(api, bot), "Where is the printer setup?");
  assert.equal(r.meta.answered, true, r.response);
  assert.equal(r.citations["1"].file_name, "printer.md", r.response);
  assert.match(r.response, /To set up the printer/);
});

test("a compound the question writes as one word and its source as two still finds it", async () => {
  const bot = await newChatbot(api, { name: "Rücksendungen", show_citations: true });
  await uploadText(bot, "ruecksendung.md", "# Rücksendungen\n\nDie Frist für die Rückgabe beträgt dreißig Tage ab Lieferung. Legen Sie den Lieferschein bei.\n");
  await uploadText(bot, "versand.md", "# Versand\n\nDie Lieferung dauert zwei bis drei Tage; die Frist für Reklamationen beginnt mit dem Versand.\n");
  await uploadText(bot, "zahlung.md", "# Zahlung\n\nWir akzeptieren Rechnung, Lastschrift und Kreditkarte.\n");
  const search = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "Wie lange ist die Rückgabefrist?" } });
  assert.equal(search.status, 200, search.text);
  assert.equal(search.json.results[0]?.file_name, "ruecksendung.md", search.text);
  assert.equal(search.json.search_query, "Wie lange ist die rückgabe frist?");
  const r = await ask(await newSession(api, bot), "Wie lange ist die Rückgabefrist?");
  assert.equal(r.meta.answered, true, r.response);
  assert.equal(r.citations["1"].file_name, "ruecksendung.md", r.response);
  assert.match(r.response, /Die Frist für die Rückgabe beträgt dreißig Tage/);

  const english = await newChatbot(api, { name: "Account settings", show_citations: true });
  await uploadText(english, "settings.md", "# Settings\n\nTo set the time zone of your account, open Settings and pick the city nearest to you.\n");
  await uploadText(english, "profile.md", "# Profile\n\nChange your name, change your photo: every change is saved at once.\n");
  const found = await api.post(`/chatbot/${english.uuid}/search`, { body: { query: "How do I change my timezone?" } });
  assert.equal(found.status, 200, found.text);
  assert.equal(found.json.results[0]?.file_name, "settings.md", found.text);
  assert.equal(found.json.search_query, "How do I change my time zone?");
  // A word a source holds is searched as it is, not cut ("profile" is not "pro file").
  const whole = await api.post(`/chatbot/${english.uuid}/search`, { body: { query: "Where is my profile?" } });
  assert.equal(whole.json.results[0]?.file_name, "profile.md", whole.text);
  assert.equal(whole.json.search_query, undefined);
});

test("a misspelled question still finds and answers from its source", async () => {
  const bot = await newChatbot(api, { name: "Streaming help", show_citations: true });
  await uploadText(bot, "cancel.md", "# Cancelling\n\nYou can cancel your subscription at any time from the billing page; access continues until the period ends.\n");
  await uploadText(bot, "password.md", "# Password\n\nTo reset your password, open the sign-in page and follow the link we email you.\n");
  await uploadText(bot, "devices.md", "# Devices\n\nWatch on up to four devices at once: phones, tablets, televisions and computers.\n");
  const search = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "forgot my pasword" } });
  assert.equal(search.status, 200, search.text);
  assert.equal(search.json.results[0]?.file_name, "password.md", search.text);
  assert.equal(search.json.search_query, "forgot my password");
  const r = await ask(await newSession(api, bot), "How do I cancle my subscribtion?");
  assert.equal(r.meta.answered, true, r.response);
  assert.equal(r.citations["1"].file_name, "cancel.md", r.response);
  assert.match(r.response, /cancel your subscription at any time/);
  // A word no source holds anything like is left as it is: nothing is made up.
  const none = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "zebrafish" } });
  assert.equal(none.status, 200, none.text);
  assert.deepEqual(none.json.results, []);
  assert.equal(none.json.search_query, undefined);
});

test("Italian and Portuguese questions find their sources and are answered in their language", async () => {
  const bot = await newChatbot(api, { name: "Negozio", show_citations: true });
  await uploadText(bot, "spedizioni.md", "# Spedizioni\n\nLe spedizioni in Italia arrivano in due giorni lavorativi.\n");
  await uploadText(bot, "resi.md", "# Resi\n\nPuoi restituire un prodotto entro trenta giorni dalla consegna.\n");
  await uploadText(bot, "entregas.md", "# Entregas\n\nAs encomendas para Portugal são entregues em cinco dias úteis.\n");
  const r = await ask(await newSession(api, bot), "Quanto tempo ci vuole per la spedizione in Italia?");
  assert.equal(r.meta.answered, true, r.response);
  assert.equal(r.citations["1"].file_name, "spedizioni.md", r.response);
  assert.match(r.response, /due giorni lavorativi/);
  const pt = await ask(await newSession(api, bot), "Quando chega a minha encomenda?");
  assert.equal(pt.citations["1"].file_name, "entregas.md", pt.response);
  assert.match(pt.response, /cinco dias úteis/);
  const none = await ask(await newSession(api, bot), "Posso pagare con un assegno bancario?");
  assert.equal(none.meta.answered, false, none.response);
  assert.match(none.response, /^Non /);
});

test("Spanish, Dutch and Polish questions are searched by what they ask, not by their greetings and function words", async () => {
  const bot = await newChatbot(api, { name: "Biblioteca", show_citations: true });
  await uploadText(bot, "horario.md", "# Horario\n\nLa biblioteca abre de lunes a sábado de 9 a 20 horas. Los domingos y festivos está cerrada.\n");
  await uploadText(bot, "carnet.md", "# Carnet\n\nEl carnet de socio es gratuito y se hace en el mostrador con un documento de identidad.\n");
  for (const [question, answer] of [
    ["Werkt de app ook offline?", "Ja, notities die je offline maakt worden gesynchroniseerd zodra je weer online bent."],
    ["Hoe reset ik mijn wachtwoord?", "Klik op Wachtwoord vergeten op de inlogpagina."],
    ["Czy wystawiacie faktury VAT?", "Tak, fakturę VAT wystawiamy do każdego zamówienia."],
    ["Ile kosztuje dostawa?", "Dostawa kurierem kosztuje 15 zł."],
  ]) {
    assert.equal((await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question, answer } })).status, 200);
  }
  // "domingos" searched as its start "doming", which the index's stemmer read as "dome".
  for (const question of ["¿Abren los domingos?", "¡Hola! ¿Abren los domingos? ¡Gracias!"]) {
    const r = await ask(await newSession(api, bot), question);
    assert.equal(r.citations["1"]?.file_name, "horario.md", `${question}: ${r.response}`);
    assert.equal(r.meta.answered, true, `${question}: ${r.response}`);
  }
  const offline = await ask(await newSession(api, bot), "kan ik offline werken");
  assert.match(offline.response, /^Ja, notities/, offline.response);
  const invoice = await ask(await newSession(api, bot), "Czy mogę dostać fakturę?");
  assert.match(invoice.response, /^Tak, fakturę VAT/, invoice.response);
});

test("a Chinese source is found by a Chinese question", async () => {
  const bot = await newChatbot(api, { name: "商店", show_citations: true });
  await uploadText(bot, "退货.md", "# 退货和退款\n\n购买后三十天内可以退货。退款会在五个工作日内退回原来的付款方式。\n");
  await uploadText(bot, "配送.md", "# 配送\n\n我们向四十个国家发货。标准配送通常需要七个工作日，加急配送需要三个工作日。\n");
  const search = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "退款多久能到账？" } });
  assert.equal(search.status, 200, search.text);
  assert.equal(search.json.results[0].file_name, "退货.md");
  const session = await newSession(api, bot);
  const r = await ask(session, "加急配送要几天？");
  assert.equal(r.citations["1"].file_name, "配送.md", r.response);
  assert.match(r.response, /加急配送需要三个工作日/);
  assert.equal(r.meta.answered, true);
  // A question as people type it: its grammar ("多久", "能") is no word the passage lacks.
  const refund = await ask(session, "退款多久能到账？");
  assert.equal(refund.citations["1"].file_name, "退货.md", refund.response);
  assert.match(refund.response, /退款会在五个工作日内退回/);
  assert.equal(refund.meta.answered, true, refund.response);
});

test("a question in English with a Chinese or Japanese word in it is searched by its English words", async () => {
  const bot = await newChatbot(api, { name: "Northwind", show_citations: true });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "What is your refund policy?", answer: "Refunds within 30 days of delivery." } });
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Do you ship abroad?", answer: "We ship to 40 countries." } });
  const session = await newSession(api, bot);
  for (const [query, expected] of [
    ["What is your refund policy? 谢谢", /30 days/],
    ["What is your refund policy? ありがとう", /30 days/],
    ["Do you ship abroad to 日本?", /40 countries/],
  ]) {
    const r = await ask(session, query);
    assert.match(r.response, expected, `${query}: ${r.response}`);
  }
});

test("a Q&A pair answers a paraphrase of its question alone", async () => {
  const bot = await shopBot();
  await api.post(`/chatbot/${bot.uuid}/data-source/qa`, {
    body: { question: "How long does a refund take?", answer: "Refunds reach your account within five to seven working days." },
  });
  const session = await newSession(api, bot);
  const r = await ask(session, "How long do refunds usually take?");
  assert.equal(r.response, "Refunds reach your account within five to seven working days. [1]");
  assert.deepEqual(Object.keys(r.citations), ["1"]);
  assert.equal(r.citations["1"].type, "qa");
  assert.equal(r.meta.answered, true);
});

test("a follow-up about the conversation's subject is not answered by a pair that shares only its own words", async () => {
  const bot = await newChatbot(api, { name: "Billing help", show_citations: true });
  for (const [question, answer] of [
    ["How do I get a refund for my invoice?", "Refunds are paid back to the card you paid with, within 5 days of the request."],
    ["How long does delivery of a parcel take?", "Parcels arrive in 3 days by courier."],
  ]) {
    assert.equal((await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question, answer } })).status, 200);
  }
  const session = await newSession(api, bot);
  const first = await ask(session, "How do I get a refund for my invoice?");
  assert.match(first.response, /^Refunds are paid back/);
  const followUp = await ask(session, "and how long does that take?");
  assert.doesNotMatch(followUp.response, /Parcels/, followUp.response);
  assert.match(followUp.response, /within 5 days/);
});

test("a follow-up naming a subject of its own is answered about it, not about the previous question", async () => {
  const bot = await newChatbot(api, { name: "Policies", show_citations: true });
  await uploadText(bot, "policies.md", [
    "# Store policies",
    "## Shipping",
    "Standard shipping within the EU takes three to five days. Express shipping costs 12 euros and arrives the next working day.",
    "## Returns",
    "You can return any item within 30 days. Refunds are issued to the original payment method within 14 days.",
    "## Payment",
    "We accept Visa, Mastercard, PayPal and bank transfer.",
    "## Account",
    "To reset your password, click Forgot password on the sign-in page.",
  ].join("\n\n"));
  const session = await newSession(api, bot);
  const first = await ask(session, "How much is express shipping?");
  assert.match(first.response, /12 euros/);
  const refunds = await ask(session, "Refunds?");
  assert.match(refunds.response, /^Refunds are issued/, refunds.response);
  const paypal = await ask(session, "Do you take PayPal too?");
  assert.match(paypal.response, /^We accept Visa/, paypal.response);
  // "sent by email" is not shipping: a passage holding only another word for the question's
  // is not stitched in beside the one that answers.
  const abroad = await ask(await newSession(api, bot), "Do you ship to the USA?");
  assert.match(abroad.response, /shipping/);
  assert.doesNotMatch(abroad.response, /password/, abroad.response);
});

test("a Q&A pair answers a question that shares none of its words, said as customers say it, in English and German", async () => {
  const bot = await newChatbot(api, { name: "Parcels", show_citations: true });
  const pairs = [
    ["Do you ship abroad?", "Yes, we deliver to 40 countries; international orders arrive within two weeks."],
    ["Can I change my order?", "Orders can be changed within one hour from your account page."],
    ["What is your refund policy?", "Unused items can be returned within 30 days for a full refund."],
    ["Which payment methods do you accept?", "We accept Visa, Mastercard, PayPal and bank transfer."],
  ];
  for (const [question, answer] of pairs) {
    assert.equal((await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question, answer } })).status, 200);
  }
  for (const [asked, expected] of [
    ["Can you send my order to another country?", "Do you ship abroad?"],
    ["Can I get my money back?", "What is your refund policy?"],
    ["Do you take credit cards?", "Which payment methods do you accept?"],
  ]) {
    const r = await ask(await newSession(api, bot), asked);
    assert.deepEqual(Object.keys(r.citations), ["1"], `${asked}: ${r.response}`);
    assert.equal(r.citations["1"].title, expected, asked);
    assert.equal(r.response, `${pairs.find(([q]) => q === expected)[1]} [1]`);
    assert.equal(r.meta.answered, true);
  }
  // A word of many senses is not widened: "change" finds the pair that says it, not others.
  const search = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "How do I change my order?" } });
  assert.equal(search.json.results[0].title, "Can I change my order?");
  // The same in German, in German's own word forms.
  const german = await newChatbot(api, { name: "Versand", show_citations: true });
  for (const [question, answer] of [
    ["Liefern Sie ins Ausland?", "Ja, wir liefern in 20 Länder; die Zustellung dauert eine Woche."],
    ["Wie lange dauert die Rückerstattung?", "Die Erstattung ist nach fünf Werktagen auf Ihrem Konto."],
  ]) {
    assert.equal((await api.post(`/chatbot/${german.uuid}/data-source/qa`, { body: { question, answer } })).status, 200);
  }
  const r = await ask(await newSession(api, german), "Versendet ihr auch in andere Länder?");
  assert.equal(r.response, "Ja, wir liefern in 20 Länder; die Zustellung dauert eine Woche. [1]");
  assert.equal(r.citations["1"].title, "Liefern Sie ins Ausland?");
});

test("past the candidate budget, only chunks holding a question's rarer words are scored", async () => {
  // Eight sections say "policy"; one also says "refund". The same text in two Workers: one
  // with the default budget, one that may score only two chunks per search.
  const sections = ["Privacy", "Cookies", "Security", "Shipping", "Warranty", "Accessibility", "Pricing"].map(
    (topic) => `## ${topic}\n\nOur ${topic.toLowerCase()} policy is reviewed every year by the board and published on this page.`,
  );
  sections.push("## Money back\n\nOur refund policy gives you thirty days to send an unused item back.");
  const text = `# Policies\n\n${sections.join("\n\n")}\n`;
  const { worker: small, key: smallKey, api: smallApi } = await startAccount({ vars: { SEARCH_CANDIDATE_BUDGET: "2" } });
  const results = {};
  for (const [name, w, k, a] of [["default", worker, key, api], ["small", small, smallKey, smallApi]]) {
    const bot = await newChatbot(a, { name: `Policies ${name}`, show_citations: true });
    const r = await upload(w, k, bot.uuid, { name: "policies.md", bytes: new TextEncoder().encode(text), type: "text/markdown" });
    assert.equal(r.status, 200, r.text);
    assert.equal((await settled(a, r.json.uuid)).status, "success");
    const search = await a.post(`/chatbot/${bot.uuid}/search`, { body: { query: "What is the refund policy?", limit: 10 } });
    assert.equal(search.status, 200, search.text);
    // A single word is never gated, however common.
    const single = await a.post(`/chatbot/${bot.uuid}/search`, { body: { query: "policy", limit: 10 } });
    assert.equal(single.status, 200, single.text);
    results[name] = { texts: search.json.results.map((x) => x.text), single: single.json.results.length, bot };
  }
  assert.match(results.default.texts[0], /refund/);
  assert.ok(results.default.texts.some((t) => !/refund/.test(t)), "within the budget every chunk saying either word is a candidate");
  assert.ok(results.small.texts.length > 0);
  assert.ok(results.small.texts.every((t) => /refund/.test(t)), JSON.stringify(results.small.texts));
  assert.ok(results.small.single >= 8, `${results.small.single} results for one word`);
  // A whole turn reads the same gated candidates and answers from the refund section.
  const session = await newSession(smallApi, results.small.bot);
  const answer = await smallApi.post(`/session/${session.uuid}/message/non-stream`, { body: { query: "What is the refund policy?" } });
  assert.equal(answer.status, 200, answer.text);
  assert.match(answer.json.response, /thirty days/);
  // Another account's chatbot is still a 404 (checked in the same round trip as the search),
  // whatever the body says; one's own with a bad body is a 400.
  const other = await small.newAccount("other");
  const otherApi = client(small, other.key);
  const foreignBot = (await otherApi.post("/chatbot/create", { body: { name: "Theirs" } })).json;
  for (const body of [{ query: "refund policy" }, { query: "" }, { query: "refund", agent_uuid: "nope" }]) {
    const foreign = await smallApi.post(`/chatbot/${foreignBot.uuid}/search`, { body });
    assert.equal(foreign.status, 404, foreign.text);
  }
  const bad = await smallApi.post(`/chatbot/${results.small.bot.uuid}/search`, { body: { query: "" } });
  assert.equal(bad.status, 400, bad.text);
});

test("past the budget, a question's own word gates beside rarer words for it: one chatbot's common word still finds another's", async () => {
  // Another chatbot says "shipping" in every section, so the index holds it in more chunks than
  // the budget; the thesaurus's other words for it ("delivery", "dispatch") are rarer. The
  // pair that says "shipping" must still be found by it.
  const { worker: small, key: smallKey, api: smallApi } = await startAccount({ vars: { SEARCH_CANDIDATE_BUDGET: "2" } });
  const logistics = await newChatbot(smallApi, { name: "Logistics handbook" });
  const sections = ["Pallets", "Containers", "Customs", "Insurance", "Tracking"].map(
    (topic) => `## ${topic}\n\nShipping ${topic.toLowerCase()} follow the shipping rules of each port and carrier.`,
  );
  const up = await upload(small, smallKey, logistics.uuid, { name: "handbook.md", bytes: new TextEncoder().encode(`# Handbook\n\n${sections.join("\n\n")}\n`), type: "text/markdown" });
  assert.equal((await settled(smallApi, up.json.uuid)).status, "success");
  const shop = await newChatbot(smallApi, { name: "Shop" });
  const pair = await smallApi.post(`/chatbot/${shop.uuid}/data-source/qa`, { body: { question: "What does shipping cost?", answer: "Shipping is free over 50 euros." } });
  assert.equal(pair.status, 200, pair.text);
  for (const query of ["shipping", "shipping?", "shipping abroad"]) {
    const found = await smallApi.post(`/chatbot/${shop.uuid}/search`, { body: { query } });
    assert.equal(found.status, 200, found.text);
    assert.equal(found.json.results[0]?.data_source_uuid, pair.json.uuid, query);
  }
});

test("a plain-text answer keeps a sentence broken across short lines whole, and reads a label with its sentence", async () => {
  const bot = await newChatbot(api, { name: "Museum", show_citations: true });
  await uploadText(bot, "museum.txt", "Museum hours\n\nThe sculpture museum opens at ten\nfrom the first of April until the end of October.\n\nWarranty\n\nEvery audio guide carries a three year warranty against defects.\n");
  const session = await newSession(api, bot);
  const hours = await ask(session, "When does the sculpture museum open?");
  assert.match(hours.response, /opens at ten from the first of April until the end of October\./);
  const warranty = await ask(await newSession(api, bot), "How long is the audio guide warranty?");
  assert.match(warranty.response, /^Warranty: Every audio guide carries a three year warranty against defects\./);
  assert.doesNotMatch(warranty.response, /defects\. Warranty/);
});

test("a typo in an ending the stemmer strips is corrected: 'subscripton' finds 'subscription'", async () => {
  const bot = await newChatbot(api, { name: "Typo endings", show_citations: true });
  await uploadText(bot, "billing.md", "# Billing\n\nTo end your subscription, open Workspace settings, then Billing, and click Cancel plan.\n");
  await uploadText(bot, "boards.md", "# Boards\n\nA board holds cards in columns; drag a card to move it.\n");
  const search = await api.post(`/chatbot/${bot.uuid}/search`, { body: { query: "end my subscripton" } });
  assert.equal(search.status, 200, search.text);
  assert.equal(search.json.results[0]?.file_name, "billing.md", search.text);
  assert.equal(search.json.search_query, "end my subscription");
});

test("a pair sharing only the product's name, or on something other than the question's acronym, does not answer it", async () => {
  const bot = await newChatbot(api, { name: "Tallyboard help", show_citations: true });
  for (const [question, answer] of [
    ["Does Tallyboard have Gantt charts?", "Yes, the Timeline view shows cards as a Gantt chart."],
    ["Is there a dark mode in Tallyboard?", "Yes. Choose Profile, then Appearance, then Theme."],
  ]) {
    const r = await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question, answer } });
    assert.equal(r.status, 200, r.text);
    assert.equal((await settled(api, r.json.uuid)).status, "success");
  }
  await uploadText(bot, "about.md", "# About\n\nTallyboard is a project-management app for small teams.\n");
  for (const q of ["is tallyboard HIPAA compliant", "Does Tallyboard support SCIM?"]) {
    const r = await ask(await newSession(api, bot), q);
    assert.equal(r.meta.answered, false, `${q}: ${r.response}`);
    assert.doesNotMatch(r.response, /^Yes/, q);
  }
  const gantt = await ask(await newSession(api, bot), "can tallyboard show a gantt chart?");
  assert.equal(gantt.response, "Yes, the Timeline view shows cards as a Gantt chart. [1]");
});

test("a follow-up of a follow-up keeps the conversation's subject, and is measured against the last one", async () => {
  const bot = await newChatbot(api, { name: "Plans", show_citations: true });
  await uploadText(bot, "pricing.md", "# Pricing\n\n| Plan | Monthly price | Max members |\n|---|---|---|\n| Starter | $7 | 25 |\n| Business | $12 | 100 |\n| Enterprise | Contact sales | Unlimited |\n\nPrices do not include VAT.\n");
  await uploadText(bot, "webhooks.md", "# Webhooks\n\nOutgoing webhooks are available on Business and Enterprise workspaces, up to 20 endpoints each.\n");
  await uploadText(bot, "teams.md", "# Teams\n\nTeams moving from another tool get two months free when they import a board.\n");
  const session = await newSession(api, bot);
  await ask(session, "How much does the Starter plan cost per month?");
  await ask(session, "and for bigger teams?");
  const enterprise = await ask(session, "what about enterprise?");
  assert.equal(enterprise.citations["1"].file_name, "pricing.md", enterprise.response);
  assert.match(enterprise.response.split("\n")[0], /Enterprise/, enterprise.response);
  const vat = await ask(session, "does that include VAT?");
  assert.equal(vat.meta.answered, true, vat.response);
  assert.match(vat.response, /do not include VAT/);
});

test("Spanish typed without accents or '¿' is answered in Spanish, and a title before a name ends no sentence", async () => {
  const bot = await newChatbot(api, { name: "Clínica", show_citations: true });
  await uploadText(bot, "equipo.md", "# Equipo\n\nLa Dra. Laura Giménez dirige la clínica desde 2009. Las citas se confirman por WhatsApp.\n");
  const unsure = await ask(await newSession(api, bot), "si falto a la cita me cobrais algo");
  assert.match(unsure.response, /^No estoy seguro|^No encontré/, unsure.response);
  const who = await ask(await newSession(api, bot), "quien dirige la clinica?");
  assert.match(who.response, /La Dra\. Laura Giménez dirige la clínica desde 2009\./, who.response);
});

test("a Chinese follow-up asking 'what about X?' with 呢 keeps the conversation's subject", async () => {
  const bot = await newChatbot(api, { name: "网课平台", show_citations: true });
  await uploadText(bot, "手机下载.md", "# 手机应用下载课程\n\n在手机应用中，点击课程页面的下载按钮，即可离线观看课程。\n");
  await uploadText(bot, "网页版播放.md", "# 网页版播放\n\n网页版支持倍速播放和中英文字幕，网页版也可以投屏到电视。\n");
  await uploadText(bot, "网页版下载.md", "# 网页版下载\n\n网页版不支持下载课程，只能在线观看。\n");
  const session = await newSession(api, bot);
  const first = await ask(session, "手机上怎么下载课程？");
  assert.equal(first.citations["1"].file_name, "手机下载.md", first.response);
  const followUp = await ask(session, "网页版呢？");
  assert.equal(followUp.citations["1"].file_name, "网页版下载.md", followUp.response);
  assert.match(followUp.response, /网页版不支持下载课程/, followUp.response);
  // Alone, nothing says the question is about downloads.
  const alone = await ask(await newSession(api, bot), "网页版呢？");
  assert.equal(alone.citations["1"].file_name, "网页版播放.md", alone.response);
});

test("'gibt es' asks whether something exists: a pair sharing only those words does not answer", async () => {
  const bot = await newChatbot(api, { name: "Radverleih", show_citations: true });
  const pair = await api.post(`/chatbot/${bot.uuid}/data-source/qa`, { body: { question: "Gibt es einen Lieferservice für Räder?", answer: "Ja, wir liefern Räder an Hotels im Stadtgebiet." } });
  assert.equal(pair.status, 200, pair.text);
  await uploadText(bot, "preise.md", "# Rabatte\n\nGruppen ab sechs Rädern erhalten 15 Prozent Rabatt. Studierende zahlen unter der Woche 20 Prozent weniger.\n");
  const r = await ask(await newSession(api, bot), "Gibt es einen Studentenrabatt?");
  assert.equal(r.meta.answered, false, r.response);
  assert.doesNotMatch(r.response, /^Ja, wir liefern/, r.response);
});

test("a number and its unit written as one or as two ('5GHz', '5 GHz'), and 'wifi' for 'Wi-Fi', still match", async () => {
  const bot = await newChatbot(api, { name: "Thermostat", show_citations: true });
  await uploadText(bot, "wifi.md", "# Connecting\n\nThe thermostat joins 2.4 GHz and 5 GHz Wi-Fi networks with WPA2 or WPA3.\n");
  await uploadText(bot, "power.md", "# Power\n\nThe thermostat needs a 24V common wire; batteries are not supported.\n");
  await uploadText(bot, "compat.md", "# Compatibility\n\nThe thermostat works with most heating and cooling systems, and it works with Alexa.\n");
  const joined = await ask(await newSession(api, bot), "Will it work with 5GHz wifi?");
  assert.equal(joined.citations["1"].file_name, "wifi.md", joined.response);
  assert.equal(joined.meta.answered, true, joined.response);
  const apart = await ask(await newSession(api, bot), "Does it need 24 V power?");
  assert.equal(apart.citations["1"].file_name, "power.md", apart.response);
});

test("a question naming a code ('E42') is answered from the passage that names it, not one sharing its other words", async () => {
  const bot = await newChatbot(api, { name: "Thermostat codes", show_citations: true });
  await uploadText(bot, "troubleshooting.md", "# Troubleshooting\n\nIf your thermostat is showing an error code on its display, see the Error codes page first.\n");
  await uploadText(bot, "codes.md", "# Error codes\n\n| Code | Meaning | What to do |\n|---|---|---|\n| E23 | Heating wire not responding | Check the furnace fuse. |\n| E42 | Wi-Fi password rejected | Enter the password again in Settings > Network. |\n| E45 | No connection to the service | Check that your internet works. |\n");
  const r = await ask(await newSession(api, bot), "My thermostat is showing E42");
  assert.equal(r.citations["1"].file_name, "codes.md", r.response);
  assert.match(r.response, /E42/, r.response);
  assert.doesNotMatch(r.response, /E23|E45/, r.response);
});
