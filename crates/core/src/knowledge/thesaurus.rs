//! Words that customers and help pages use for the same thing ("send my order abroad" and
//! "we ship internationally", "money back" and "refund"). A question is searched and compared
//! with each other member of a group it uses, standing for the words it used.
//!
//! The groups are a small curated list of customer-service vocabulary and of what people call
//! things in software, in English, French, German and Spanish, kept to words that mean the
//! same in nearly every context they appear in. A general thesaurus
//! (WordNet's synonyms) was measured on the Git evaluation and lost more than it gained:
//! everyday verbs (make, take, give) bring synonyms found on every page.

use super::language::Language;
use super::query::{is_particle, is_stop_word, words};
use std::sync::OnceLock;

/// Each group: words or two-word phrases that mean the same to a customer; an irregular past
/// ("sent", "paid", "bought") is a member of its own, as stemming does not reach it. A member
/// written with a leading `=` is a word of many senses ("change", "order", "call"): a question
/// using a narrower member is also searched with it, but a question using it brings no
/// others, which would match most of any text. One group to a line, so groups read side by
/// side.
#[rustfmt::skip]
const ENGLISH: &[&[&str]] = &[
    &["ship", "shipping", "shipment", "send", "sent", "deliver", "delivery", "dispatch"],
    &["abroad", "overseas", "international", "internationally", "worldwide", "foreign",
      "another country", "other countries"],
    &["refund", "money back", "reimburse", "reimbursement", "repay"],
    &["=return", "send back"],
    &["voucher", "coupon", "gift card", "gift certificate", "promo code", "discount code"],
    &["log in", "login", "sign in", "signin", "log on", "logon"],
    &["sign up", "signup", "register", "registration", "enrol", "enroll"],
    &["password", "passcode", "passphrase"],
    &["price", "cost", "fee", "charge", "pricing"],
    &["pay", "paid", "payment"],
    &["credit card", "debit card", "bank card", "visa", "mastercard", "amex"],
    &["=change", "modify", "amend", "alter", "edit"],
    &["buy", "bought", "purchase", "=order"],
    &["delete", "remove", "erase", "rid"],
    &["contact", "in touch", "phone", "telephone", "=call"],
    &["shop", "=store", "showroom", "boutique"],
    &["discount", "reduction", "rebate", "money off"],
    &["parcel", "package"],
    &["collect", "pick up", "pickup"],
    &["repair", "=fix", "mend"],
    &["warranty", "guarantee"],
    &["rent", "rental", "hire", "lease"],
    &["unsubscribe", "opt out"],
    &["newsletter", "mailing list"],
    &["promotional", "marketing"],
    &["wash", "launder"],
    &["broken", "damaged", "defective", "faulty", "corrupt", "corrupted"],
    &["=support", "customer service", "helpdesk", "help desk"],
    &["account", "profile"],
    &["exchange", "swap", "replace"],
    &["cheap", "cheaper", "inexpensive", "lower price"],
    &["email", "mail"],
    &["invoice", "receipt", "bill", "billing"],
    &["subscription", "membership", "tier", "=plan"],
    &["yearly", "annual", "annually", "per year"],
    &["monthly", "per month"],
    &["declined", "rejected", "=failed"],
    &["charity", "nonprofit", "non profit"],
    &["cancel", "terminate", "call off"],
    &["opening hours", "opening times", "business hours"],
    // Not "late": compared stemmed, it would be "later" too.
    &["delayed", "overdue"],
    &["lost", "missing"],
    &["in stock", "=available", "availability"],
    &["appointment", "booking", "reservation", "reserve", "=book"],
    &["human", "real person", "representative", "=agent"],
    &["enquiry", "inquiry"],
    &["vat", "=tax"],
    &["quote", "quotation", "estimate"],
    &["job", "career", "vacancy", "vacancies"],
    &["wrong", "incorrect"],
    // Using software: what people call things and what manuals call them.
    &["folder", "directory"],
    &["settings", "preferences", "=configuration"],
    &["app", "application", "=program", "=software"],
    &["upgrade", "=update"],
    &["log out", "logout", "sign out", "signout"],
    &["computer", "pc", "laptop", "=machine"],
    &["internet", "online", "=network"],
    &["shortcut", "hotkey", "keybinding", "key binding"],
    &["picture", "image", "photo"],
    &["slow", "sluggish", "laggy"],
    &["wifi", "wi fi", "wireless"],
    &["turn on", "switch on", "enable", "activate"],
    &["turn off", "switch off", "disable", "deactivate"],
    &["configure", "set up", "setup"],
    &["restart", "reboot"],
    &["search", "look up", "locate", "=find"],
    &["sync", "synchronize", "synchronise"],
    &["notification", "alert"],
];

#[rustfmt::skip]
const FRENCH: &[&[&str]] = &[
    &["livrer", "livraison", "expédier", "expédition", "envoyer", "envoi"],
    &["étranger", "international", "autre pays", "autres pays"],
    &["carte cadeau", "chèque cadeau", "bon cadeau", "bon achat", "coupon"],
    &["connecter", "connexion", "identifier", "identification", "login"],
    &["prix", "tarif", "coût", "coûter", "frais"],
    &["payer", "paiement", "=régler", "=règlement"],
    &["carte bancaire", "carte bleue", "carte crédit", "visa", "mastercard"],
    &["=changer", "modifier"],
    &["annuler", "annulation", "résilier", "résiliation"],
    &["acheter", "achat", "=commande", "=commander"],
    &["supprimer", "effacer"],
    &["contacter", "=joindre", "téléphone", "téléphoner", "appeler", "service client"],
    &["magasin", "boutique"],
    &["réduction", "remise", "rabais", "promotion"],
    &["colis", "paquet"],
    &["réparer", "réparation", "dépanner", "dépannage"],
    &["louer", "location"],
    &["désabonner", "désinscrire", "désinscription", "désabonnement"],
    &["facture", "reçu"],
    &["abonnement", "adhésion"],
    &["défectueux", "abîmé", "cassé", "endommagé"],
    &["dossier", "répertoire"],
    &["paramètres", "réglages", "préférences"],
    &["ordinateur", "pc"],
];

#[rustfmt::skip]
const GERMAN: &[&[&str]] = &[
    &["versand", "versenden", "liefern", "lieferung", "zustellung", "schicken", "senden"],
    &["ausland", "international", "anderes land", "andere länder"],
    &["erstattung", "rückerstattung", "geld zurück", "zurückerstatten"],
    &["gutschein", "geschenkkarte", "geschenkgutschein", "coupon"],
    &["anmelden", "anmeldung", "einloggen", "login"],
    &["passwort", "kennwort"],
    &["preis", "kosten", "gebühr", "gebühren"],
    &["bezahlen", "zahlung", "=zahlen"],
    &["kreditkarte", "ec karte", "visa", "mastercard"],
    &["=ändern", "bearbeiten", "anpassen"],
    &["stornieren", "stornierung", "kündigen", "kündigung"],
    &["kaufen", "kauf", "=bestellung", "=bestellen"],
    &["löschen", "entfernen"],
    &["kontakt", "kontaktieren", "telefon", "anrufen", "kundendienst", "kundenservice"],
    &["=laden", "geschäft", "filiale"],
    &["rabatt", "ermäßigung", "nachlass"],
    &["paket", "sendung"],
    &["reparatur", "reparieren"],
    &["garantie", "gewährleistung"],
    &["mieten", "miete", "leihen", "ausleihen", "verleih"],
    &["rechnung", "quittung", "beleg"],
    &["abo", "abonnement", "mitgliedschaft"],
    &["rückgabe", "zurückgeben", "zurücksenden", "retoure"],
    &["umtausch", "umtauschen", "tauschen"],
    &["defekt", "kaputt", "beschädigt"],
    &["ordner", "verzeichnis"],
    &["einstellungen", "=optionen"],
];

#[rustfmt::skip]
const SPANISH: &[&[&str]] = &[
    &["enviar", "envío", "entregar", "entrega", "mandar", "despachar"],
    &["extranjero", "internacional", "otro país", "otros países"],
    &["reembolso", "reembolsar", "devolver dinero"],
    &["tarjeta regalo", "cupón", "=vale", "código promocional"],
    &["acceder", "login", "iniciar sesión", "=entrar"],
    &["contraseña", "=clave"],
    &["precio", "coste", "costo", "tarifa"],
    &["pagar", "pago"],
    &["tarjeta crédito", "tarjeta débito", "visa", "mastercard"],
    &["=cambiar", "modificar"],
    &["cancelar", "anular", "cancelación", "anulación"],
    &["comprar", "compra", "=pedido"],
    &["borrar", "eliminar", "suprimir"],
    &["contacto", "contactar", "teléfono", "llamar", "atención cliente"],
    &["tienda", "=local"],
    &["descuento", "rebaja", "promoción"],
    &["paquete", "bulto"],
    &["reparar", "reparación", "arreglar"],
    &["alquilar", "alquiler", "rentar", "arrendar"],
    &["factura", "recibo"],
    &["suscripción", "membresía", "abono"],
    &["roto", "dañado", "defectuoso", "estropeado"],
    &["carpeta", "directorio"],
    &["configuración", "ajustes", "preferencias"],
];

/// Each language's groups; Italian and Portuguese have none yet.
const GROUPS: [(Language, &[&[&str]]); 4] = [
    (Language::English, ENGLISH),
    (Language::French, FRENCH),
    (Language::German, GERMAN),
    (Language::Spanish, SPANISH),
];

/// A group member as questions are compared with it.
struct Member {
    /// A word of many senses (written `=word`): reached, never widened.
    broad: bool,
    /// Its words as written in the group.
    words: &'static str,
    /// Its words in the forms questions are compared by (`Language::term`).
    forms: Vec<String>,
}

/// `language`'s groups, worked out once per language: every question is compared with every
/// group.
fn groups(language: Language) -> &'static [Vec<Member>] {
    static READ: [OnceLock<Vec<Vec<Member>>>; GROUPS.len()] =
        [const { OnceLock::new() }; GROUPS.len()];
    let Some(slot) = GROUPS.iter().position(|(l, _)| *l == language) else {
        return &[];
    };
    READ[slot].get_or_init(|| {
        GROUPS[slot]
            .1
            .iter()
            .map(|group| {
                group
                    .iter()
                    .map(|member| {
                        let (broad, words) = match member.strip_prefix('=') {
                            Some(words) => (true, words),
                            None => (false, *member),
                        };
                        let forms = words.split(' ').map(|w| language.term(w)).collect();
                        Member {
                            broad,
                            words,
                            forms,
                        }
                    })
                    .collect()
            })
            .collect()
    })
}

/// Most alternatives one question adds to its search.
pub const MAX_ALTERNATIVES: usize = 16;

/// Another way to say some of a question's words: `words` (one or two, as written in the
/// group) stand for the question's content words `stands_for`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alternative {
    pub words: Vec<String>,
    pub stands_for: Vec<String>,
}

/// The most words an English phrasal verb's object may put between the verb and its particle
/// ("send it back", "send the boots back", "turn the alarm off").
const MAX_PARTICLE_GAP: usize = 2;

/// Where the question's word `forms` use a member's `member` forms: the positions of its words,
/// one after the other, or in English a verb and its particle with a short object between.
fn used_at(forms: &[String], member: &[String], language: Language) -> Option<Vec<usize>> {
    if let Some(at) = forms.windows(member.len()).position(|w| w == member) {
        return Some((at..at + member.len()).collect());
    }
    let [verb, particle] = member else {
        return None;
    };
    if language != Language::English || !is_particle(particle) {
        return None;
    }
    forms.iter().enumerate().find_map(|(at, form)| {
        let after = forms.get(at + 2..forms.len().min(at + 2 + MAX_PARTICLE_GAP))?;
        let gap = after.iter().position(|f| f == particle)?;
        (form == verb).then(|| vec![at, at + 2 + gap])
    })
}

/// The alternatives of `query`'s words, at most `MAX_ALTERNATIVES`: for each group member the
/// question uses (compared as `Language::term` forms, a phrase as two adjacent words or
/// a verb and its particle with a short object between), every
/// other member of its group that the question does not already use.
pub fn alternatives(query: &str, language: Language) -> Vec<Alternative> {
    let groups = groups(language);
    if groups.is_empty() {
        return Vec::new();
    }
    let asked = words(query);
    let forms: Vec<String> = asked.iter().map(|w| language.term(w)).collect();
    let mut out: Vec<Alternative> = Vec::new();
    for members in groups {
        // The members the question uses, and its content words among them.
        let mut found: Vec<usize> = Vec::new();
        let mut stands_for: Vec<String> = Vec::new();
        for (m, member) in members.iter().enumerate().filter(|(_, m)| !m.broad) {
            let Some(at) = used_at(&forms, &member.forms, language) else {
                continue;
            };
            found.push(m);
            for &i in &at {
                let word = &asked[i];
                if !is_stop_word(word) && !stands_for.contains(word) {
                    stands_for.push(word.clone());
                }
            }
        }
        if found.is_empty() || stands_for.is_empty() {
            continue;
        }
        for (m, member) in members.iter().enumerate() {
            // A member searched for as the question's own word, or as another member alike.
            let same_form = |k: usize| members[k].forms == member.forms;
            if found.iter().any(|&k| same_form(k)) || (0..m).any(same_form) {
                continue;
            }
            if out.len() == MAX_ALTERNATIVES {
                return out;
            }
            out.push(Alternative {
                words: member.words.split(' ').map(str::to_string).collect(),
                stands_for: stands_for.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_of(alternatives: &[Alternative]) -> Vec<String> {
        alternatives.iter().map(|a| a.words.join(" ")).collect()
    }

    #[test]
    fn a_phrasal_verb_is_found_around_its_object() {
        for q in [
            "How long do I have to send something back?",
            "Can I send the boots back?",
            "Can I send back the boots?",
        ] {
            let found = alternatives(q, Language::English);
            assert!(words_of(&found).contains(&"return".to_string()), "{q}");
        }
        // Too far apart, or not a particle: not the phrase.
        let far = alternatives("Can I send my new winter boots back?", Language::English);
        assert!(!words_of(&far).contains(&"return".to_string()));
    }

    #[test]
    fn a_word_brings_the_rest_of_its_group_standing_for_it() {
        let found = alternatives("Can I get my money back?", Language::English);
        assert_eq!(words_of(&found), ["refund", "reimburse", "repay"]);
        assert!(found.iter().all(|a| a.stands_for == ["money", "back"]));
        let found = alternatives("Do you deliver abroad?", Language::English);
        assert!(words_of(&found).contains(&"ship".to_string()));
        assert!(words_of(&found).contains(&"another country".to_string()));
    }

    #[test]
    fn a_word_of_many_senses_brings_no_others() {
        assert!(alternatives("How do I change my order?", Language::English).is_empty());
        let found = words_of(&alternatives(
            "Can I modify my purchase?",
            Language::English,
        ));
        assert!(found.contains(&"change".to_string()) && found.contains(&"order".to_string()));
    }

    #[test]
    fn inflected_forms_are_found_and_other_languages_have_none() {
        let found = alternatives("Were the parcels shipped?", Language::English);
        assert!(words_of(&found).contains(&"package".to_string()));
        assert!(words_of(&found).contains(&"deliver".to_string()));
        assert!(alternatives("Spedite all'estero?", Language::Italian).is_empty());
        let found = words_of(&alternatives(
            "Livrez-vous à l'étranger ?",
            Language::French,
        ));
        assert!(
            found.contains(&"expédier".to_string()) && found.contains(&"autre pays".to_string())
        );
        assert!(alternatives("What is it?", Language::English).is_empty());
    }

    #[test]
    fn every_member_is_one_or_two_plain_words_in_one_group() {
        for (_, table) in GROUPS {
            let mut seen = std::collections::HashSet::new();
            for group in table {
                assert!(group.len() >= 2);
                for member in *group {
                    let written = member.trim_start_matches('=');
                    let parts: Vec<&str> = written.split(' ').collect();
                    assert!(parts.len() <= 2, "{member}");
                    // As `query::words` reads them, so the question's words can be compared.
                    assert_eq!(words(written), parts, "{member}");
                    assert!(seen.insert(*member), "{member} is in two groups");
                }
            }
        }
    }
}
