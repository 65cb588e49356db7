//! Enums spelled as strings on the wire and in D1 (a chatbot's visibility, an agent's type, a
//! data source's type and status, ...). Each is declared once with `string_enum!`, variant next
//! to its spelling; that one list gives both directions (`as_str`, `parse`), the list for
//! error messages (`NAMES`), serde in both directions, and the `StringEnum` impl that request
//! validation (`Body::opt_variant`) and storage (binding a value, reading a row) go through.

/// What every `string_enum!` type offers, for code that works with any of them.
pub trait StringEnum: Copy + Sized + 'static {
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// Every spelling, in declaration order.
    const NAMES: &'static [&'static str];

    fn as_str(self) -> &'static str;

    /// The variant spelled exactly `text`.
    fn parse(text: &str) -> Option<Self>;
}

/// Declares a string enum: `Variant = "spelling"` for each variant.
///
/// ```ignore
/// string_enum! {
///     /// Who may chat with a chatbot.
///     pub enum Visibility {
///         Private = "private",
///         Public = "public",
///         Hybrid = "hybrid",
///     }
/// }
/// ```
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$variant_meta])* $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$( $name::$variant ),+];
            /// Every spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$( $text ),+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }

            /// The variant spelled exactly `text`.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl $crate::string_enum::StringEnum for $name {
            const ALL: &'static [$name] = $name::ALL;
            const NAMES: &'static [&'static str] = $name::NAMES;

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }

            fn parse(text: &str) -> Option<Self> {
                $name::parse(text)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Spelling;
                impl<'de> ::serde::de::Visitor<'de> for Spelling {
                    type Value = $name;

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        write!(f, "one of: {}", $name::NAMES.join(", "))
                    }

                    fn visit_str<E: ::serde::de::Error>(self, text: &str) -> Result<$name, E> {
                        $name::parse(text).ok_or_else(|| E::unknown_variant(text, $name::NAMES))
                    }
                }
                deserializer.deserialize_str(Spelling)
            }
        }
    };
}

pub(crate) use string_enum;

#[cfg(test)]
mod tests {
    use super::StringEnum;

    string_enum! {
        /// A test enum.
        pub enum Fruit {
            Apple = "apple",
            /// Spelled with a dash.
            BloodOrange = "blood-orange",
        }
    }

    #[test]
    fn both_directions_agree() {
        for &fruit in Fruit::ALL {
            assert_eq!(Fruit::parse(fruit.as_str()), Some(fruit));
            assert_eq!(<Fruit as StringEnum>::parse(fruit.as_str()), Some(fruit));
        }
        assert_eq!(Fruit::NAMES, &["apple", "blood-orange"]);
        assert_eq!(Fruit::parse("Apple"), None);
        assert_eq!(Fruit::BloodOrange.to_string(), "blood-orange");
    }

    #[test]
    fn serde_uses_the_spelling() {
        assert_eq!(
            serde_json::to_value(Fruit::BloodOrange).unwrap(),
            "blood-orange"
        );
        assert_eq!(
            serde_json::from_value::<Fruit>("apple".into()).unwrap(),
            Fruit::Apple
        );
        let err = serde_json::from_value::<Fruit>("pear".into()).unwrap_err();
        assert!(
            err.to_string().contains("apple, blood-orange") || err.to_string().contains("`apple`"),
            "{err}"
        );
        assert!(serde_json::from_value::<Fruit>(1.into()).is_err());
    }
}
